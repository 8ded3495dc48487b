"""Faults outside the step's compute: in speculation's draft planning nobody fails (the sequence goes
on without drafts, outputs equal speculation off); in the scheduler only the request being
scheduled fails, and the others' outputs equal a run without it. No KV block is left behind."""

from __future__ import annotations

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.engine.speculation import draft_walk, speculative
from deepinfer.engine.speculation.speculative import SpeculativeConfig
from deepinfer.types import FinishReason

PROMPTS = ["hello hello hello hello", "abc abc abc", "the fox jumps over the fox", "1 2 3 1 2 3 1 2"]
SCHEMA = {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["ab", "cd"]}, "maxItems": 4},
                                           "n": {"type": "integer"}},
          "required": ["tags", "n"], "additionalProperties": False}


def engine(tiny, speculative_on: bool) -> Engine:
    model, tokenizer = tiny()
    # prior step cost and no resting: every step plans and verifies drafts, whatever the load
    return Engine(model, tokenizer, EngineConfig(num_kv_blocks=128, batch_invariant=True,
                                                 speculative=speculative_on,
                                                 speculative_config=SpeculativeConfig(measured_cost=False, max_rest=0)))


def params() -> list[SamplingParams]:
    return [SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True),
            SamplingParams(temperature=0.9, seed=3, max_tokens=24, ignore_eos=True),
            SamplingParams(temperature=0.0, max_tokens=40, json_schema=SCHEMA),
            SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)]


def tokens(outs) -> list[list[int]]:
    return [o.outputs[0].token_ids for o in outs]


def assert_no_blocks_held(engine: Engine) -> None:
    assert not engine.requests and not engine.scheduler.running and not engine.scheduler.waiting
    assert engine.blocks.num_free_blocks == engine.blocks.num_blocks


@pytest.fixture
def plain(tiny):
    return tokens(LLM.from_engine(engine(tiny, False)).generate(PROMPTS, params()))


def test_a_drafter_fault_drops_one_sequences_drafts_and_fails_nobody(tiny, plain, monkeypatch):
    eng = engine(tiny, True)
    spec = eng.speculator
    observe, bad = spec.proposer.observe, []

    def faulty(key, prompt, output):
        if len(output) >= 3 and not bad:
            bad.append(key)  # the first sequence three tokens in: its drafter index breaks
        if bad and key == bad[0]:
            raise KeyError("drafter index (injected)")
        return observe(key, prompt, output)

    monkeypatch.setattr(spec.proposer, "observe", faulty)
    outs = LLM.from_engine(eng).generate(PROMPTS, params())
    assert tokens(outs) == plain
    assert all(o.outputs[0].finish_reason != FinishReason.ERROR for o in outs)
    stats = eng.stats()
    assert bad and stats["speculation_faults"] >= 1
    assert stats["accepted_tokens"] > 0  # the others kept drafting
    assert_no_blocks_held(eng)


def test_a_constraint_walk_fault_bars_that_sequence_only(tiny, plain, monkeypatch):
    eng = engine(tiny, True)
    advance, raised = draft_walk.guided.advance, []  # the first matcher walked raises ever after

    def faulty(matcher, token):
        if not raised:
            raised.append(matcher)
        if matcher is raised[0]:
            raise RuntimeError("matcher walk (injected)")
        return advance(matcher, token)

    class WalkGuided:  # what the draft walk calls (the plain path keeps the real module)
        def __getattr__(self, name):
            return faulty if name == "advance" else getattr(guided, name)

    guided = draft_walk.guided
    monkeypatch.setattr(draft_walk, "guided", WalkGuided())
    outs = LLM.from_engine(eng).generate(PROMPTS, params())
    monkeypatch.undo()
    assert tokens(outs) == plain
    assert eng.stats()["speculation_faults"] >= 1 and raised
    assert_no_blocks_held(eng)


def test_a_fault_in_scheduling_drafts_drops_that_steps_drafts(tiny, plain, monkeypatch):
    eng = engine(tiny, True)
    select, calls = speculative.select_lengths, []

    def faulty(*args, **kwargs):
        calls.append(1)
        if len(calls) % 3 == 0:
            raise ZeroDivisionError("cost model (injected)")
        return select(*args, **kwargs)

    monkeypatch.setattr(speculative, "select_lengths", faulty)
    outs = LLM.from_engine(eng).generate(PROMPTS, params())
    assert tokens(outs) == plain
    stats = eng.stats()
    assert stats["speculation_faults"] == len(calls) // 3 > 0 and stats["accepted_tokens"] > 0
    assert_no_blocks_held(eng)


@pytest.mark.parametrize("where", ["admission", "running"])
def test_a_scheduling_fault_fails_only_that_request(tiny, plain, monkeypatch, where):
    eng = engine(tiny, False)
    model, tokenizer = tiny()
    marker = tokenizer.encode("zebra quartz")
    blocks = eng.blocks
    allocate, grow = blocks.allocate_prefix, blocks.grow
    bad_tables = []

    def faulty_allocate(table, token_ids, *rest):
        if where == "admission" and token_ids[:len(marker)] == marker:
            raise MemoryError("block table (injected)")
        if token_ids[:len(marker)] == marker:
            bad_tables.append(table)
        return allocate(table, token_ids, *rest)

    def faulty_grow(table, size):
        if any(table is t for t in bad_tables) and size > len(marker) + 4:  # a few decodes in
            raise MemoryError("block table (injected)")
        return grow(table, size)

    monkeypatch.setattr(blocks, "allocate_prefix", faulty_allocate)
    monkeypatch.setattr(blocks, "grow", faulty_grow)
    bad = SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)
    prompts = PROMPTS[:2] + [marker] + PROMPTS[2:]
    outs = LLM.from_engine(eng).generate(prompts, params()[:2] + [bad] + params()[2:])
    failed = outs.pop(2)
    assert failed.outputs[0].finish_reason == FinishReason.ERROR
    assert "MemoryError: block table (injected)" in failed.outputs[0].error
    if where == "running":
        assert 0 < len(failed.outputs[0].token_ids) < 24
    assert tokens(outs) == plain
    monkeypatch.undo()
    assert_no_blocks_held(eng)
