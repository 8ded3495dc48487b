"""The KV tier on other paged layouts: DeepSeek-V3's MLA (k and v of different widths) round-trips
through disk with identical greedy outputs; an all-sliding-window model refuses the tier clearly."""

import random

import pytest

from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.errors import UserError
from deepinfer.types import SamplingParams

GREEDY = SamplingParams(max_tokens=5, temperature=0)


def test_mla_cache_round_trips_through_the_disk_tier(tiny, tmp_path):
    model, tokenizer = tiny("deepseek")
    rng = random.Random(0)
    prompts = [[rng.randrange(10, 350) for _ in range(70)] for _ in range(2)]

    def llm(**options):
        return LLM.from_engine(Engine(model, tokenizer, EngineConfig(
            num_kv_blocks=64, batch_invariant=True, speculative=False, **options)))

    reference = [o.token_ids for o in llm().generate(prompts, GREEDY)]
    first = llm(kv_tier_dir=str(tmp_path))
    assert [o.token_ids for o in first.generate(prompts, GREEDY)] == reference
    first.engine.kv.tier.close()
    second = llm(kv_tier_dir=str(tmp_path))
    outs = second.generate(prompts, GREEDY)
    assert [o.token_ids for o in outs] == reference
    assert [o.num_cached_tokens for o in outs] == [64, 64]
    assert second.engine.kv.tier.stats.loaded_blocks == 8


def test_sliding_window_model_refuses_the_tier(tiny, tmp_path):
    model, tokenizer = tiny("mistral-sliding")
    with pytest.raises(UserError, match="sliding window"):
        Engine(model, tokenizer, EngineConfig(num_kv_blocks=64, kv_tier_dir=str(tmp_path)))
