"""A tiny random DeepSeek-V4 checkpoint for engine tests, saved by transformers, with the tiny tokenizer.

Every layer type (sliding only, CSA at rate 4, HCA at rate 8), hash and top-k MoE and
hyper-connections, a sliding window of 6: prompts of a few dozen tokens span several windows
and compression blocks. The Lightning Indexer keeps 3 entries, fewer than a prompt makes, so it
really chooses; 8 index heads make a score of exactly 0 (every head's ReLU zero, where top-k's
tie-breaking would depend on how many entries exist) rare.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from deepinfer.testing import make_tiny_model_dir

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
V4_ENGINE_CONFIG = dict(
    hidden_size=64, moe_intermediate_size=24, num_hidden_layers=4, num_attention_heads=4, head_dim=16,
    q_lora_rank=32, partial_rotary_factor=0.5, num_experts_per_tok=2, n_routed_experts=8,
    layer_types=[SLIDING, CSA, HCA, CSA], mlp_layer_types=["hash_moe", "moe", "hash_moe", "moe"],
    compress_rates={CSA: 4, HCA: 8}, hc_mult=3, hc_sinkhorn_iters=5, sliding_window=6, o_groups=2,
    o_lora_rank=12, index_n_heads=8, index_head_dim=16, index_topk=3, max_position_embeddings=8192,
    rms_norm_eps=1e-5)


def build_v4(vocab_size: int, seed: int = 0, **overrides):
    """The transformers model (eval, float32) with non-trivial random weights."""
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = json.loads(json.dumps(V4_ENGINE_CONFIG)) | overrides  # a deep copy: transformers edits dicts
    config = AutoConfig.for_model("deepseek_v4", vocab_size=vocab_size, **fields)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("tid2eid"):  # hash routing: distinct random experts per token id
                rows = [torch.randperm(config.n_routed_experts, generator=gen)[:tensor.shape[1]]
                        for _ in range(tensor.shape[0])]
                tensor.copy_(torch.stack(rows))
            elif tensor.is_floating_point():
                noise = torch.randn(tensor.shape, generator=gen)
                tensor.copy_(1.0 + 0.2 * noise if "norm" in name else 0.15 * noise)
    return model.eval()


def save_v4_dir(path: Path, seed: int = 0, **overrides):
    """(transformers model, model directory with the tiny tokenizer's files)."""
    tokenizer_dir = make_tiny_model_dir(path / "tok")
    vocab = json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"]
    model = build_v4(vocab, seed, **overrides)
    out = path / "model"
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(tokenizer_dir / name, out / name)
    return model, out


@torch.no_grad()
def reference_greedy(model, ids: list[int], steps: int, chunks: list[int] | None = None) -> list[int]:
    """transformers' greedy tokens: the prompt fed in `chunks` (default: at once), then one token a step."""
    from transformers import DynamicCache

    cache, start, logits = DynamicCache(config=model.config), 0, None
    for n in chunks or [len(ids)]:
        logits = model(torch.tensor([ids[start:start + n]]), cache=cache, use_cache=True).logits[0, -1]
        start += n
    assert start == len(ids)
    out = []
    for _ in range(steps):
        out.append(int(torch.argmax(logits)))
        logits = model(torch.tensor([out[-1:]]), cache=cache, use_cache=True).logits[0, -1]
    return out
