"""Fixtures for the multi-process tests: a tiny random DeepSeek-V3 saved by transformers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from deepinfer.model import load_model
from deepinfer.model.kv import DenseKVCache
from deepinfer.testing import make_tiny_model_dir

DEEPSEEK = dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=24,
                q_lora_rank=32, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, moe_intermediate_size=24,
                n_routed_experts=8, num_experts_per_tok=3, n_group=4, topk_group=2, n_shared_experts=1,
                first_k_dense_replace=1, routed_scaling_factor=2.5, norm_topk_prob=True)


@pytest.fixture(scope="session")
def deepseek_dir(tmp_path_factory) -> Path:
    from transformers import AutoConfig, AutoModelForCausalLM

    path = tmp_path_factory.mktemp("ep-deepseek")
    tokenizer_dir = make_tiny_model_dir(path / "tok")
    vocab = json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"]
    config = AutoConfig.for_model("deepseek_v3", vocab_size=vocab, hidden_size=64, intermediate_size=80,
                                  max_position_embeddings=1024, **DEEPSEEK)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if tensor.is_floating_point():
                noise = torch.randn(tensor.shape)
                tensor.copy_(1.0 + 0.2 * noise if "norm" in name else 0.15 * noise)
    out = path / "model"
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(tokenizer_dir / name, out / name)
    return out


@torch.no_grad()
def single_process_greedy(model, prompt: list[int], new_tokens: int) -> tuple[list[int], list[torch.Tensor]]:
    """The reference: one sequence alone through the whole (unsharded) model, greedy."""
    cache = DenseKVCache(len(model.layers))
    tokens, logits, inputs, position = [], [], list(prompt), 0
    for _ in range(new_tokens):
        ids = torch.tensor(inputs)
        row = model(ids, torch.arange(position, position + len(inputs)), cache)[-1]
        position += len(inputs)
        tokens.append(int(row.argmax()))
        logits.append(row)
        inputs = tokens[-1:]
    return tokens, logits


V4 = dict(vocab_size=96, hidden_size=64, moe_intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
          head_dim=16, q_lora_rank=32, partial_rotary_factor=0.5, num_experts_per_tok=2, n_routed_experts=8,
          layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                       "compressed_sparse_attention"], mlp_layer_types=["hash_moe", "moe", "hash_moe", "moe"],
          compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8}, hc_mult=3,
          hc_sinkhorn_iters=5, sliding_window=6, o_groups=2, o_lora_rank=12, index_n_heads=4, index_head_dim=16,
          index_topk=3, max_position_embeddings=256, rms_norm_eps=1e-5, eos_token_id=None)


@pytest.fixture(scope="session")
def deepseek_v4_dir(tmp_path_factory) -> Path:
    """A tiny random DeepSeek-V4 (hash and top-k MoE layers) saved by transformers."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model("deepseek_v4", **V4)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("tid2eid"):  # distinct random experts per token id
                tensor.copy_(torch.stack([torch.randperm(8, generator=gen)[:tensor.shape[1]]
                                          for _ in range(tensor.shape[0])]))
            elif tensor.is_floating_point():
                noise = torch.randn(tensor.shape)
                tensor.copy_(1.0 + 0.1 * noise if "norm" in name else 0.1 * noise)
    out = tmp_path_factory.mktemp("ep-v4") / "model"
    model.save_pretrained(out)
    return out


@torch.no_grad()
def single_process_greedy_v4(model, prompt: list[int], new_tokens: int) -> tuple[list[int], list[torch.Tensor]]:
    cache = model.new_cache()
    tokens, logits, inputs, position = [], [], list(prompt), 0
    for _ in range(new_tokens):
        row = model(torch.tensor(inputs), torch.arange(position, position + len(inputs)), cache)[-1]
        position += len(inputs)
        tokens.append(int(row.argmax()))
        logits.append(row)
        inputs = tokens[-1:]
    return tokens, logits


@pytest.fixture(scope="session")
def deepseek(deepseek_dir):
    return load_model(deepseek_dir)
