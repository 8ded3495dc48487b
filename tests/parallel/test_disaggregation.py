"""Prefill/decode disaggregation 1+1 against a single engine, token for token.

Two real processes joined with gloo: the prefill worker computes each prompt's KV blocks and
sends them; the decode worker takes them as a prefix-cache hit and generates. Greedy and seeded
sampled requests must give exactly the single engine's tokens, and the blocks must really have
moved and been used (the decode engine's prefix-cache hits count them).
"""

from __future__ import annotations

import re

import pytest
import torch

from deepinfer.engine import LLM
from deepinfer.parallel.disagg import generate_disaggregated
from deepinfer.testing import make_tiny_model_dir
from deepinfer.types import SamplingParams


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("pd-llama"))


def test_one_prefill_one_decode_worker_match_a_single_engine(llama_dir):
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (40, 23, 9)]
    # the fourth shares the first's two full blocks: on the decode side they are already cached
    prompts.append(prompts[0][:32] + [5, 6, 7, 8, 9])
    params = [SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True),
              SamplingParams(max_tokens=12, temperature=0.9, top_p=0.95, seed=7, ignore_eos=True),
              SamplingParams(max_tokens=6, temperature=1.0, seed=11, ignore_eos=True),
              SamplingParams(max_tokens=10, temperature=0.8, seed=5, regex="[a-z]{2,6}-[0-9]{2}")]
    single = LLM(str(llama_dir), quantization=None).generate(prompts, params)
    disagg = generate_disaggregated(llama_dir, prompts, params)
    for prompt, want, got in zip(prompts, single, disagg):
        assert got.token_ids == want.outputs[0].token_ids, f"prompt of {len(prompt)} tokens"
        full_blocks = (len(prompt) - 1) // 16
        assert got.blocks_moved == full_blocks and got.prefix_hit_tokens == 16 * full_blocks
    assert re.fullmatch("[a-z]{2,6}-[0-9]{2}", disagg[3].text)
    assert disagg[0].bytes_moved > 0 and disagg[2].bytes_moved == 0  # 9 tokens: no full block to move
