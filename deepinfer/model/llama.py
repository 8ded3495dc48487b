"""Llama-style decoders: Llama (and SmolLM2), Mistral, Qwen2, Qwen3.

Owns grouped-query attention with these families' variations, as transformers
5.x implements them: q/k/v bias (Qwen2, or Llama/Qwen3 `attention_bias`), o bias,
per-head q/k RMSNorm before rotary (Qwen3), per-layer sliding windows (Mistral,
Qwen2/3), `mlp_bias` (Llama). Attention memory is the cache's business.
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.config import ModelConfig
from deepinfer.model.decoder import DecoderLayer, Model
from deepinfer.model.kv import KVCache
from deepinfer.model.layers import Linear, RMSNorm, SwiGLU, Weights, rms_norm
from deepinfer.model.rope import apply_rotary


class GQAttention(nn.Module):
    def __init__(self, config: ModelConfig, layer: int) -> None:
        super().__init__()
        self.layer = layer
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, config.head_dim
        self.scale, self.sliding_window = config.softmax_scale, config.layer_sliding_windows[layer]
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.split = (q_size, kv_size, kv_size)
        self.qkv = Linear(config.hidden_size, {"q_proj": q_size, "k_proj": kv_size, "v_proj": kv_size},
                          bias=config.qkv_bias)
        self.o = Linear(q_size, {"o_proj": config.hidden_size}, bias=config.o_bias)
        self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps) if config.qk_norm else None
        self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps) if config.qk_norm else None

    def load(self, weights: Weights, prefix: str) -> None:
        self.qkv.load(weights, prefix)
        self.o.load(weights, prefix)
        self.qk_norm_weight = None
        if self.q_norm is not None:
            self.q_norm.load(weights, prefix + "q_norm.")
            self.k_norm.load(weights, prefix + "k_norm.")
            # One weight per head row of the joint [T, H + Hkv, D] q/k tensor: same products, fewer ops.
            self.qk_norm_weight = torch.cat([self.q_norm.weight.expand(self.num_heads, -1),
                                             self.k_norm.weight.expand(self.num_kv_heads, -1)])

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache) -> torch.Tensor:
        num_tokens, q_size, kv_size, _ = x.shape[0], *self.split
        qkv = self.qkv(x)  # [T, (H + 2 Hkv) * D]
        # q and k go through norm and rotary together, as one [T, H + Hkv, D] tensor.
        qk = qkv[:, :q_size + kv_size].view(num_tokens, self.num_heads + self.num_kv_heads, self.head_dim)
        v = qkv[:, q_size + kv_size:].view(num_tokens, self.num_kv_heads, self.head_dim)
        if self.qk_norm_weight is not None:
            qk = rms_norm(qk, self.qk_norm_weight, self.q_norm.eps)
        q, k = apply_rotary(qk, cos, sin).split([self.num_heads, self.num_kv_heads], dim=1)
        out = cache.attend(self.layer, q, k, v, scale=self.scale, sliding_window=self.sliding_window)
        return self.o(out.reshape(num_tokens, -1))  # [T, hidden]


def build_llama(config: ModelConfig, dtype: torch.dtype, device: torch.device | str) -> Model:
    layers = [DecoderLayer(config, GQAttention(config, i),
                           SwiGLU(config.hidden_size, config.intermediate_size, config.mlp_bias))
              for i in range(config.num_layers)]
    return Model(config, layers, dtype, device)
