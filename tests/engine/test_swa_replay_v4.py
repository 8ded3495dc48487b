"""Prefix caching for DeepSeek-V4: a hit restores the cached compressed entries, and the sliding-window
KV (never cached) is rebuilt by replay: exact replay equals a cold run token for token (seeded
sampling); bounded replay recomputes only its suffix. Options from LLM(...) down to the cache."""

from __future__ import annotations

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import LLM, Engine, EngineConfig
from deepinfer.errors import UserError
from deepinfer.model import load_model
from deepinfer.tokenizer import Tokenizer
from v4_checkpoint import save_v4_dir

SHARED = [(7 * i + 3) % 380 + 3 for i in range(160)]  # 10 compressed pages of 16 tokens
FIRST, SECOND = SHARED + [40, 41, 42, 43, 44], SHARED + [50, 51, 52]
SAMPLED = SamplingParams(temperature=0.8, seed=5, max_tokens=24, ignore_eos=True)


@pytest.fixture(scope="module")
def v4(tmp_path_factory):
    _, path = save_v4_dir(tmp_path_factory.mktemp("v4"))
    return load_model(path), Tokenizer.from_pretrained(path), path


def engine(v4, **options) -> LLM:
    options = dict(speculative=False, num_kv_blocks=64) | options
    return LLM.from_engine(Engine(v4[0], v4[1], EngineConfig(**options)))


def cold(v4, prompt, params=SAMPLED):
    return engine(v4, enable_prefix_caching=False).generate(prompt, params)[0].token_ids


def test_exact_replay_after_a_hit_equals_a_cold_run(v4):
    llm = engine(v4, swa_replay="exact")
    llm.generate(FIRST, SAMPLED)
    blocks = llm.engine.blocks
    assert blocks.pages_in_use() == {"entries": 0, "window": 0, "pending@4": 0, "pending@8": 0}
    assert len(blocks.entries.evictable) == 188 // 16  # compressed pages kept (prompt and output), no window rows
    second = llm.generate(SECOND, SAMPLED)[0]
    stats = llm.engine.stats()
    assert stats["prefix_cache_hit_tokens"] == 160
    # 4 layers, window 6: 20 tokens back, and layer 3's CSA branch pools from 156 on (3 * 5 before it)
    assert stats["swa_replayed_tokens"] == 160 - min(160 - 20, 156 - 15)
    assert second.token_ids == cold(v4, SECOND)


def test_bounded_replay_recomputes_its_suffix_only(v4):
    llm = engine(v4, swa_replay="bounded", swa_replay_tokens=3)
    llm.generate(FIRST, SAMPLED)
    out = llm.generate(SECOND, SAMPLED)[0]
    # 3 tokens, but back to the CSA layers' last complete window (156) at least: 4 tokens
    assert llm.engine.stats()["swa_replayed_tokens"] == 4
    assert len(out.token_ids) == 24 and out.outputs[0].finish_reason is not None


def test_bounded_replay_as_long_as_the_prefix_is_a_cold_run(v4):
    llm = engine(v4, swa_replay_tokens=1000)  # bounded is the hybrid default
    llm.generate(FIRST, SAMPLED)
    assert llm.generate(SECOND, SAMPLED)[0].token_ids == cold(v4, SECOND)
    assert llm.engine.stats()["swa_replayed_tokens"] == 160


def test_replay_options_pass_from_llm_and_bad_ones_are_refused(v4):
    llm = LLM(str(v4[2]), swa_replay="exact", swa_replay_tokens=7, num_kv_blocks=16)
    assert llm.engine.blocks.replay.mode == "exact" and llm.engine.blocks.replay.tokens == 7
    with pytest.raises(UserError, match="swa_replay must be one of bounded, exact"):
        engine(v4, swa_replay="approximate")
