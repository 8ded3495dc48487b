"""Fixtures for engine tests: one tiny random model per family, engines built over it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.model import load_model
from deepinfer.testing import make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer


@pytest.fixture(autouse=True)
def _one_thread():
    # Tiny tensors: with 2 threads on a shared, loaded machine each op waits on thread wake-ups.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


# families built with transformers (not in deepinfer.testing): model_type, config overrides
TRANSFORMERS_FAMILIES = {
    "deepseek": ("deepseek_v3", dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
                                     kv_lora_rank=24, q_lora_rank=32, qk_nope_head_dim=12, qk_rope_head_dim=8,
                                     v_head_dim=10, moe_intermediate_size=24, n_routed_experts=8,
                                     num_experts_per_tok=3, n_group=4, topk_group=2, n_shared_experts=1,
                                     first_k_dense_replace=1, routed_scaling_factor=2.5, norm_topk_prob=True)),
    "mistral-sliding": ("mistral", dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        sliding_window=6)),
    # Qwen2 with every layer sliding (use_sliding_window, windows from layer 0 on)
    "qwen2-sliding": ("qwen2", dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                    use_sliding_window=True, sliding_window=5, max_window_layers=0)),
}


def _transformers_model_dir(family: str, path: Path) -> Path:
    """A tiny random model of `family` saved by transformers, with the tiny byte-level tokenizer."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer_dir = make_tiny_model_dir(path / "tok")
    vocab = json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"]
    model_type, overrides = TRANSFORMERS_FAMILIES[family]
    config = AutoConfig.for_model(model_type, vocab_size=vocab, hidden_size=64, intermediate_size=80,
                                  max_position_embeddings=1024, **overrides)
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


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """family -> (model, tokenizer), loaded once per session."""
    loaded = {}

    def get(family: str = "llama"):
        if family not in loaded:
            path = tmp_path_factory.mktemp(f"tiny-{family}")
            if family in TRANSFORMERS_FAMILIES:
                path = _transformers_model_dir(family, path)
            else:
                path = make_tiny_model_dir(path, family=family)
            loaded[family] = (load_model(path), Tokenizer.from_pretrained(path))
        return loaded[family]

    return get


@pytest.fixture
def make_llm(tiny):
    def make(family: str = "llama", **options) -> LLM:
        model, tokenizer = tiny(family)
        options.setdefault("num_kv_blocks", 256)
        options.setdefault("batch_invariant", True)   # the tests compare runs across batch compositions
        return LLM.from_engine(Engine(model, tokenizer, EngineConfig(**options)))

    return make
