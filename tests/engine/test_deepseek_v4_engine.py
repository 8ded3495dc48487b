"""DeepSeek-V4 through the engine: greedy output equal to transformers', batching, chunked prefill,
preemption, constraints, seeded sampling and speculation (drafts verified across compression
boundaries, rejected drafts' compressed state rolled back)."""

from __future__ import annotations

import re

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import LLM, Engine, EngineConfig
from deepinfer.engine.speculation.speculative import SpeculativeConfig
from deepinfer.model import load_model
from deepinfer.tokenizer import Tokenizer
from v4_checkpoint import reference_greedy, save_v4_dir

GREEDY = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
PROMPTS = [[(7 * i + 3) % 380 + 3 for i in range(30)], [(5 * i + 1) % 380 + 3 for i in range(17)],
           [(11 * i + 7) % 380 + 3 for i in range(9)], [(13 * i + 2) % 380 + 3 for i in range(41)]]


@pytest.fixture(scope="module")
def v4(tmp_path_factory):
    hf, path = save_v4_dir(tmp_path_factory.mktemp("v4"))
    return hf, load_model(path), Tokenizer.from_pretrained(path)


@pytest.fixture
def make(v4):
    def build(**options) -> LLM:
        options.setdefault("speculative", False)
        if options["speculative"]:   # plans free of timing and no resting: whether drafts are verified cannot flake
            options.setdefault("speculative_config", SpeculativeConfig(measured_cost=False, max_rest=0))
        options.setdefault("num_kv_blocks", 64)  # compressed pages of 16 tokens (the default pool is 1 GiB)
        return LLM.from_engine(Engine(v4[1], v4[2], EngineConfig(**options)))
    return build


def test_greedy_equals_transformers(v4, make):
    out = make().generate(PROMPTS[0], GREEDY)[0]
    assert out.token_ids == reference_greedy(v4[0], PROMPTS[0], 16)


def test_chunked_prefill_splitting_compression_blocks_equals_transformers(v4, make):
    # chunks of 7: every boundary but the last splits a rate-4 and a rate-8 block
    out = make(max_num_batched_tokens=7).generate(PROMPTS[3], GREEDY)[0]
    assert out.token_ids == reference_greedy(v4[0], PROMPTS[3], 16, chunks=[7] * 5 + [6])


def test_continuous_batching_equals_each_request_alone(v4, make):
    llm = make(max_num_batched_tokens=24, max_num_seqs=3)  # prefill chunks mixed with decodes
    outs = llm.generate(PROMPTS, GREEDY)
    for prompt, out in zip(PROMPTS, outs):
        assert out.token_ids == reference_greedy(v4[0], prompt, 16)


def test_preemption_recomputes_the_same_tokens(v4, make):
    llm = make(num_kv_blocks=7, block_size=4, max_num_batched_tokens=64)
    outs = llm.generate(PROMPTS[:3], SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
    assert llm.engine.scheduler.num_preemptions > 0
    for prompt, out in zip(PROMPTS, outs):
        assert out.token_ids == reference_greedy(v4[0], prompt, 24)


def test_constrained_output_follows_its_regex(make):
    params = SamplingParams(temperature=0.9, seed=3, max_tokens=20, regex=r"[0-9]{3}-[a-z]{2}")
    out = make().generate(PROMPTS[1], params)[0]
    assert re.fullmatch(r"[0-9]{3}-[a-z]{2}", out.text)


def test_seeded_sampling_is_independent_of_the_batch(make):
    params = SamplingParams(temperature=0.8, seed=11, max_tokens=16, ignore_eos=True)
    alone = make().generate(PROMPTS[0], params)[0]
    batched = make(max_num_batched_tokens=16).generate(PROMPTS, [params] + [SamplingParams(
        temperature=1.0, seed=i, max_tokens=12, ignore_eos=True) for i in range(3)])[0]
    assert batched.token_ids == alone.token_ids


def test_speculation_verifies_across_compression_boundaries_and_rolls_back(v4, make):
    loop = [5, 6, 7, 8, 9, 10, 11] * 5  # n-gram drafts from the prompt; the model mostly disagrees
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    plain = make().generate(loop, params)[0]
    llm = make(speculative=True)
    drafted = llm.generate(loop, params)[0]
    counters = llm.engine.stats()
    assert counters["verified_tokens"] > counters["accepted_tokens"] > 0  # drafts accepted and rejected
    assert drafted.token_ids == plain.token_ids == reference_greedy(v4[0], loop, 40)


def test_a_prompt_larger_than_the_cache_fails_with_an_error(make):
    llm = make(num_kv_blocks=2)  # compressed pages of 16 tokens: 32 tokens of entries
    out = llm.generate(PROMPTS[3], GREEDY)[0]
    assert out.outputs[0].finish_reason.value == "error" and "the pool holds 32" in out.outputs[0].error


def test_kv_events_announce_the_compressed_pages_a_router_can_match(make):
    from deepinfer.router.index import PrefixIndex, prompt_keys

    llm = make()
    engine = llm.engine
    assert engine.enable_kv_events() is True
    prompt = [(3 * i + 5) % 380 + 3 for i in range(70)]
    llm.generate(prompt, GREEDY)
    events = engine.drain_kv_events()
    stored = [e for e in events if type(e).__name__ == "BlockStored"]
    size = engine.blocks.block_size
    assert stored and all(len(e.token_ids) == size for e in stored)
    assert stored[0].parent_hash is None and all(a.block_hash == b.parent_hash for a, b in zip(stored, stored[1:]))
    index = PrefixIndex()
    index.apply(0, events)
    keys = prompt_keys(prompt, size)
    assert keys and index.matched_blocks(keys, [0])[0] == len(keys)
    hits = engine.stats()["prefix_cache_hit_tokens"]
    llm.generate(prompt, GREEDY)   # what the router would count is what the engine then hits
    assert engine.stats()["prefix_cache_hit_tokens"] - hits == len(keys) * size
