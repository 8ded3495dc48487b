"""Single-sequence decode speed on random weights (a measurement, not a test).

    python tests/model/bench_decode.py [--threads 2] [--tokens 64]

Builds each model straight from a config with random tensors (no files), prefills
16 tokens, then times token-by-token decode with a DenseKVCache. On a shared machine
the CPU-time rate (tokens per CPU second used, all threads) is steadier than wall time.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from deepinfer.model.architectures import ARCHITECTURES
from deepinfer.model.config import parse_config
from deepinfer.model.kv import DenseKVCache

SIZES = {
    "tiny-llama": dict(architectures=["LlamaForCausalLM"], vocab_size=512, hidden_size=64, intermediate_size=128,
                       num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    "smollm2-135m": dict(architectures=["LlamaForCausalLM"], vocab_size=49152, hidden_size=576,
                         intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         tie_word_embeddings=True, rope_theta=100000),
    "tiny-deepseek-v3": dict(architectures=["DeepseekV3ForCausalLM"], vocab_size=512, hidden_size=64,
                             intermediate_size=128, num_hidden_layers=4, num_attention_heads=4, kv_lora_rank=32,
                             q_lora_rank=48, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                             moe_intermediate_size=32, n_routed_experts=16, num_experts_per_tok=4, n_group=4,
                             topk_group=2, first_k_dense_replace=1),
}


class RandomWeights:
    """A tensor source that invents every tensor it is asked for."""

    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype, self.device = dtype, torch.device("cpu")
        self.gen = torch.Generator().manual_seed(0)

    def has(self, name: str) -> bool:
        return False  # no lm_head: tie it

    def take(self, name, shape, dtype=None):
        return (torch.randn(shape, generator=self.gen) * 0.05).to(dtype or self.dtype)


def bench(name: str, dtype: torch.dtype, tokens: int) -> tuple[float, float]:
    """(tokens per wall-clock second, tokens per CPU second of this process)."""
    config = parse_config(SIZES[name], name)
    weights = RandomWeights(dtype)
    model = ARCHITECTURES[config.architecture](config, dtype, "cpu")
    model.load(weights)
    cache = DenseKVCache(config.num_layers)
    model.forward(torch.arange(16), torch.arange(16), cache)
    next_id = torch.tensor([1])
    for i in range(4):  # warm-up
        model.forward(next_id, torch.tensor([16 + i]), cache)
    start, start_cpu = time.perf_counter(), time.process_time()
    for i in range(tokens):
        logits = model.forward(next_id, torch.tensor([20 + i]), cache)
        next_id = logits[-1:].argmax(-1)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return tokens / wall, tokens / cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--models", nargs="*", default=list(SIZES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}: PASSIVE avoids spinning on a busy machine)")
    for name in args.models:
        for dtype in (torch.float32, torch.bfloat16):
            wall, cpu = bench(name, dtype, args.tokens)
            print(f"{name:18s} {str(dtype):15s} {wall:8.1f} tokens/s wall  {cpu:8.1f} tokens/CPU-s")


if __name__ == "__main__":
    main()
