"""A step that raises fails only the request that caused it; the others' outputs equal a run
without that request (greedy and seeded), and no KV block is left behind."""

from __future__ import annotations

import asyncio

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import AsyncEngine, Engine, EngineConfig, LLM
from deepinfer.engine.isolation import run_isolated
from deepinfer.engine.output import merge
from deepinfer.engine.scheduler import ScheduledSeq
from deepinfer.model import load_model
from deepinfer.testing import FaultyModel
from deepinfer.tokenizer import Tokenizer
from v4_checkpoint import save_v4_dir
from deepinfer.types import FinishReason

GOOD_PROMPTS = ["the quick brown fox", "one two three four", "a b c d e f", "hello there friend", "x = 1 + 2"]


def good_params(mode: str) -> list[SamplingParams]:
    if mode == "greedy":
        return [SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True) for _ in GOOD_PROMPTS]
    return [SamplingParams(temperature=0.9, seed=10 + i, max_tokens=12, ignore_eos=True)
            for i in range(len(GOOD_PROMPTS))]


def engine_over(model, tokenizer) -> Engine:
    # batch-invariant: the bad request shares the others' first steps, the reference run does not
    return Engine(model, tokenizer, EngineConfig(num_kv_blocks=128, batch_invariant=True))


def unused_token(tokenizer, outputs) -> int:
    """A token id that no good prompt or output holds (so only the bad request carries it)."""
    used = {t for o in outputs for t in o.prompt_token_ids + o.outputs[0].token_ids}
    return next(t for t in range(10, 10_000) if t not in used and t not in tokenizer.eos_token_ids)


def assert_no_blocks_held(engine: Engine) -> None:
    assert not engine.requests and not engine.scheduler.running and not engine.scheduler.waiting
    assert engine.blocks.num_free_blocks == engine.blocks.num_blocks


@pytest.mark.parametrize("mode", ["greedy", "seeded"])
@pytest.mark.parametrize("where", ["prefill", "decode"])
def test_a_faulting_row_fails_only_its_request(tiny, mode, where):
    model, tokenizer = tiny()
    params = good_params(mode)
    reference = LLM.from_engine(engine_over(model, tokenizer)).generate(GOOD_PROMPTS, params)
    poison = unused_token(tokenizer, reference)

    faulty = FaultyModel(model, poison)
    llm = LLM.from_engine(engine_over(faulty, tokenizer))
    if where == "prefill":  # the bad id is in its prompt: the very first step faults
        bad_prompt, bad = tokenizer.encode("bad request") + [poison], SamplingParams(max_tokens=12)
    else:  # it samples the bad id first, so its first decode step faults, mid-generation for all
        bad_prompt = "bad request"
        bad = SamplingParams(max_tokens=12, logit_bias={poison: 100.0}, ignore_eos=True)
    prompts = GOOD_PROMPTS[:2] + [bad_prompt] + GOOD_PROMPTS[2:]   # in the middle of the batch
    outs = llm.generate(prompts, params[:2] + [bad] + params[2:])

    failed = outs.pop(2)
    assert faulty.faults >= 2  # the step, then the probe that found it
    assert failed.finished and failed.outputs[0].finish_reason == FinishReason.ERROR
    assert "IndexError: INDICES element is out of DATA bounds (injected)" in failed.outputs[0].error
    assert "other requests went on" in failed.outputs[0].error
    if where == "decode":
        assert failed.outputs[0].token_ids == [poison]  # what it had produced before the fault
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
    assert [o.outputs[0].text for o in outs] == [o.outputs[0].text for o in reference]
    assert all(o.outputs[0].finish_reason == FinishReason.LENGTH for o in outs)
    assert_no_blocks_held(llm.engine)
    again = llm.generate(GOOD_PROMPTS, params)  # the engine goes on serving afterwards
    assert [o.outputs[0].token_ids for o in again] == [o.outputs[0].token_ids for o in reference]


def test_two_bad_requests_in_one_step_both_fail_alone(tiny):
    model, tokenizer = tiny()
    params = good_params("seeded")
    reference = LLM.from_engine(engine_over(model, tokenizer)).generate(GOOD_PROMPTS, params)
    poison = unused_token(tokenizer, reference)
    llm = LLM.from_engine(engine_over(FaultyModel(model, poison), tokenizer))
    bad = tokenizer.encode("bad") + [poison]
    prompts = [bad] + GOOD_PROMPTS[:3] + [bad] + GOOD_PROMPTS[3:]
    outs = llm.generate(prompts, [SamplingParams(max_tokens=4)] + params[:3] + [SamplingParams(n=2)] + params[3:])
    failed = [outs.pop(4), outs.pop(0)]
    assert all(o.outputs[k].finish_reason == FinishReason.ERROR for o in failed for k in range(len(o.outputs)))
    assert len(failed[0].outputs) == 2  # both of the n=2 request's sequences ended
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
    assert_no_blocks_held(llm.engine)


def test_a_fault_no_single_request_reproduces_runs_the_step_in_halves(tiny):
    """A fault of the whole batch (here: more than 24 rows; think memory) fails nobody."""
    model, tokenizer = tiny()
    params = good_params("greedy")
    reference = LLM.from_engine(engine_over(model, tokenizer)).generate(GOOD_PROMPTS, params)
    faulty = FaultyModel(model, min_rows=sum(len(o.prompt_token_ids) for o in reference) - 2)
    outs = LLM.from_engine(engine_over(faulty, tokenizer)).generate(GOOD_PROMPTS, params)
    assert faulty.faults >= 1
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
    assert all(o.outputs[0].finish_reason == FinishReason.LENGTH for o in outs)


def test_a_fault_after_sampling_fails_only_its_request(tiny):
    """Advancing one sequence (here its detokenizer) raises: that request ends, the rest go on."""
    model, tokenizer = tiny()
    params = good_params("greedy")
    reference = LLM.from_engine(engine_over(model, tokenizer)).generate(GOOD_PROMPTS, params)
    engine = engine_over(model, tokenizer)
    ids = [engine.add_request(tokenizer.encode(p), sp) for p, sp in zip(GOOD_PROMPTS, params)]
    seq = engine.requests[ids[1]].sequences[0]

    class Broken:
        def push(self, token):
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "injected")

    seq.detokenizer = Broken()
    results = {}
    while engine.has_unfinished():
        for delta in engine.step():
            results[delta.request_id] = merge(results.get(delta.request_id), delta)
    outs = [results[i] for i in ids]
    assert outs[1].outputs[0].finish_reason == FinishReason.ERROR and "UnicodeDecodeError" in outs[1].outputs[0].error
    del outs[1], reference[1]
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
    assert_no_blocks_held(engine)


def test_async_streams_survive_a_faulting_request(tiny):
    model, tokenizer = tiny()
    params = good_params("seeded")
    reference = LLM.from_engine(engine_over(model, tokenizer)).generate(GOOD_PROMPTS, params)
    poison = unused_token(tokenizer, reference)
    engine = AsyncEngine(engine=engine_over(FaultyModel(model, poison), tokenizer))

    async def collect(prompt, sp):
        full = None
        async for delta in engine.add_request(prompt, sp):
            full = merge(full, delta)
        return full

    async def main():
        bad = collect("bad", SamplingParams(max_tokens=8, logit_bias={poison: 100.0}))
        return await asyncio.gather(bad, *(collect(p, sp) for p, sp in zip(GOOD_PROMPTS, params)))

    try:
        failed, *outs = asyncio.run(main())
        assert failed.outputs[0].finish_reason == FinishReason.ERROR
        assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
        assert_no_blocks_held(engine.engine)
    finally:
        engine.shutdown()


class _Req:
    pass


def test_bisection_probes_about_twice_log2_of_the_batch():
    """run_isolated alone: 32 requests, one bad; it is found with a bounded number of probes and
    the final compute holds exactly the 31 others."""
    requests = [_Req() for _ in range(32)]
    bad = requests[21]
    batch = [ScheduledSeq(type("S", (), {"request": r})(), 1) for r in requests]
    calls, failed = [], []

    def compute(items):
        calls.append(len(items))
        if any(item.seq.request is bad for item in items):
            raise ValueError("bad row")
        return [0] * len(items), [None] * len(items)

    done = run_isolated(batch, compute, lambda request, exc: failed.append((request, str(exc))))
    assert failed == [(bad, "bad row")] and done.faulted
    assert [item.seq.request for item in done.batch] == [r for r in requests if r is not bad]
    assert len(done.tokens) == 31 and calls[-1] == 31
    assert len(calls) <= 2 + 2 * 5  # the step, <= 2 probes per halving, the final compute


@pytest.mark.slow  # ~10 s: building the tiny V4 checkpoint with transformers
def test_a_faulting_request_on_the_hybrid_cache_fails_alone(tmp_path):
    """DeepSeek-V4's hybrid KV cache (sliding windows, compressed entries): probing and rerunning
    a step leaves the others' state exact."""
    _, path = save_v4_dir(tmp_path)
    model, tokenizer = load_model(path), Tokenizer.from_pretrained(path)
    prompts = [[(7 * i + 3) % 380 + 3 for i in range(30)], [(5 * i + 1) % 380 + 3 for i in range(17)],
               [(11 * i + 7) % 380 + 3 for i in range(9)]]
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)

    def make(m):
        return LLM.from_engine(Engine(m, tokenizer, EngineConfig(num_kv_blocks=64, speculative=False)))

    reference = make(model).generate(prompts, params)
    poison = unused_token(tokenizer, reference)
    bad = SamplingParams(max_tokens=8, logit_bias={poison: 100.0}, ignore_eos=True)
    llm = make(FaultyModel(model, poison))
    outs = llm.generate(prompts[:1] + [[5, 6, 7]] + prompts[1:], [params, bad, params, params])
    failed = outs.pop(1)
    assert failed.outputs[0].finish_reason == FinishReason.ERROR
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in reference]
    assert not llm.engine.requests and not llm.engine.scheduler.running
