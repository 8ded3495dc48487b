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


@pytest.fixture(scope="session")
def deepseek(deepseek_dir):
    return load_model(deepseek_dir)
