"""Tiny random models of every supported family, built and run with transformers as the reference.

`FAMILIES` maps a test id to (model_type, config overrides). `save_reference` builds the
transformers model from the config with a fixed seed, gives every weight (norms and the
router correction bias included) non-trivial random values, and saves it with
`save_pretrained`. `reference_prefill` / `reference_decode` compute transformers' logits.
"""

from __future__ import annotations

from pathlib import Path

import torch

TINY = dict(vocab_size=96, hidden_size=64, intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5)
DEEPSEEK = dict(TINY, num_hidden_layers=3, num_key_value_heads=4, kv_lora_rank=24, q_lora_rank=32,
                qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, moe_intermediate_size=24,
                n_routed_experts=8, num_experts_per_tok=3, n_group=4, topk_group=2, n_shared_experts=1,
                first_k_dense_replace=1, routed_scaling_factor=2.5, norm_topk_prob=True)
YARN_DEEPSEEK = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16,
                 "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.8}

FAMILIES: dict[str, tuple[str, dict]] = {
    "llama": ("llama", dict(TINY)),
    "llama3-rope-bias": ("llama", dict(TINY, attention_bias=True, mlp_bias=True, rope_parameters={
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 32})),
    "llama-linear-rope": ("llama", dict(TINY, rope_parameters={"rope_type": "linear", "rope_theta": 500.0,
                                                               "factor": 2.0})),
    "llama-dynamic-rope": ("llama", dict(TINY, max_position_embeddings=6, rope_parameters={
        "rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})),
    "smollm2-tied": ("llama", dict(TINY, num_key_value_heads=1, tie_word_embeddings=True, head_dim=16)),
    "mistral-sliding": ("mistral", dict(TINY, sliding_window=4)),
    "qwen2-bias-sliding": ("qwen2", dict(TINY, num_hidden_layers=3, use_sliding_window=True, sliding_window=5,
                                         max_window_layers=1)),
    "qwen3-qknorm": ("qwen3", dict(TINY, head_dim=24, attention_bias=True)),
    "qwen3-yarn": ("qwen3", dict(TINY, head_dim=16, rope_parameters={
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16})),
    "deepseek-v3": ("deepseek_v3", dict(DEEPSEEK, attention_bias=True)),
    "deepseek-v3-no-q-lora-yarn": ("deepseek_v3", dict(DEEPSEEK, q_lora_rank=None, rope_parameters=YARN_DEEPSEEK)),
    "deepseek-v3-plain-rope-ungrouped": ("deepseek_v3", dict(DEEPSEEK, rope_interleave=False, n_group=1,
                                                             topk_group=1, norm_topk_prob=False,
                                                             first_k_dense_replace=0, n_shared_experts=2)),
}

PROMPT = [3, 17, 42, 5, 88, 61, 9, 23, 70, 11, 54, 2]  # 12 tokens


def build_reference(family: str, seed: int = 0):
    from transformers import AutoConfig, AutoModelForCausalLM

    model_type, overrides = FAMILIES[family]
    config = AutoConfig.for_model(model_type, **overrides)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    randomize(model, seed)
    return model.eval()


def randomize(model, seed: int) -> None:
    """Non-trivial values everywhere: transformers' init leaves norms at 1 and biases at 0."""
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if not tensor.is_floating_point():
                continue
            noise = torch.randn(tensor.shape, generator=gen)
            if name.endswith("norm.weight") or "layernorm" in name:
                tensor.copy_(1.0 + 0.2 * noise)
            else:
                tensor.copy_(0.15 * noise)


def save_reference(family: str, directory: Path, seed: int = 0, max_shard_size: str | None = None):
    model = build_reference(family, seed)
    kwargs = {"max_shard_size": max_shard_size} if max_shard_size else {}
    model.save_pretrained(directory, **kwargs)
    return model


@torch.no_grad()
def reference_prefill(model, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids])).logits[0].float()  # [T, V]


@torch.no_grad()
def reference_decode(model, ids: list[int], prefill: int) -> torch.Tensor:
    """transformers' logits for a prefill of `prefill` tokens, then one token at a time."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    rows = [model(torch.tensor([ids[:prefill]]), cache=cache, use_cache=True).logits[0]]
    for i in range(prefill, len(ids)):
        rows.append(model(torch.tensor([[ids[i]]]), cache=cache, use_cache=True).logits[0])
    return torch.cat(rows).float()
