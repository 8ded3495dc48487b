"""DeepSeek-V3-style decoder: multi-head latent attention (MLA) and mixture-of-experts layers.

Owns MLA as transformers 5.x computes it: q through a low-rank bottleneck
(q_a_proj -> RMSNorm -> q_b_proj) or a plain q_proj, a compressed kv latent
(kv_a_proj_with_mqa -> RMSNorm -> kv_b_proj) plus one shared rotary key part, and
yarn's mscale in the softmax scale. The cache sees the latent expanded per head
(naive MLA): keys [T, H, nope + rope], values [T, H, v_head_dim].
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.config import ModelConfig
from deepinfer.model.decoder import DecoderLayer, Model
from deepinfer.model.kv import KVCache
from deepinfer.model.layers import Linear, RMSNorm, SwiGLU, Weights
from deepinfer.model.moe import MoE
from deepinfer.model.rope import apply_rotary


class MLAttention(nn.Module):
    def __init__(self, config: ModelConfig, layer: int) -> None:
        super().__init__()
        mla, hidden = config.mla, config.hidden_size
        self.layer, self.num_heads, self.scale = layer, config.num_heads, config.softmax_scale
        self.nope, self.rope_dim, self.v_dim = mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim
        self.kv_rank, self.interleaved = mla.kv_lora_rank, config.rope.interleaved
        q_size = self.num_heads * (self.nope + self.rope_dim)
        bias = config.qkv_bias  # transformers: attention_bias applies to q_a, kv_a and o only
        if mla.q_lora_rank is None:
            self.q_proj, self.q_a, self.q_norm, self.q_b = Linear(hidden, {"q_proj": q_size}), None, None, None
        else:
            self.q_proj = None
            self.q_a = Linear(hidden, {"q_a_proj": mla.q_lora_rank}, bias)
            self.q_norm = RMSNorm(mla.q_lora_rank, 1e-6)  # transformers uses the default eps here
            self.q_b = Linear(mla.q_lora_rank, {"q_b_proj": q_size})
        self.kv_a = Linear(hidden, {"kv_a_proj_with_mqa": self.kv_rank + self.rope_dim}, bias)
        self.kv_norm = RMSNorm(self.kv_rank, 1e-6)
        self.kv_b = Linear(self.kv_rank, {"kv_b_proj": self.num_heads * (self.nope + self.v_dim)})
        self.o = Linear(self.num_heads * self.v_dim, {"o_proj": hidden}, config.o_bias)

    def load(self, weights: Weights, prefix: str) -> None:
        if self.q_proj is not None:
            self.q_proj.load(weights, prefix)
        else:
            self.q_a.load(weights, prefix)
            self.q_norm.load(weights, prefix + "q_a_layernorm.")
            self.q_b.load(weights, prefix)
        self.kv_a.load(weights, prefix)
        self.kv_norm.load(weights, prefix + "kv_a_layernorm.")
        self.kv_b.load(weights, prefix)
        self.o.load(weights, prefix)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache) -> torch.Tensor:
        num_tokens, heads = x.shape[0], self.num_heads
        q = self.q_proj(x) if self.q_proj is not None else self.q_b(self.q_norm(self.q_a(x)))
        q_nope, q_rot = q.view(num_tokens, heads, -1).split([self.nope, self.rope_dim], dim=-1)
        latent, k_rot = self.kv_a(x).split([self.kv_rank, self.rope_dim], dim=-1)
        kv = self.kv_b(self.kv_norm(latent)).view(num_tokens, heads, self.nope + self.v_dim)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)
        q_rot = apply_rotary(q_rot, cos, sin, self.interleaved)  # [T, H, rope]
        k_rot = apply_rotary(k_rot.view(num_tokens, 1, self.rope_dim), cos, sin, self.interleaved)  # [T, 1, rope]
        q = torch.cat([q_nope, q_rot], dim=-1)  # [T, H, nope + rope]
        k = torch.cat([k_nope, k_rot.expand(-1, heads, -1)], dim=-1)  # [T, H, nope + rope]
        out = cache.attend(self.layer, q, k, v.contiguous(), scale=self.scale)  # [T, H, v_dim]
        return self.o(out.reshape(num_tokens, -1))


def build_deepseek_v3(config: ModelConfig, dtype: torch.dtype, device: torch.device | str) -> Model:
    def mlp(i: int) -> nn.Module:
        if i < config.moe.first_k_dense_replace:
            return SwiGLU(config.hidden_size, config.intermediate_size)
        return MoE(config)

    layers = [DecoderLayer(config, MLAttention(config, i), mlp(i)) for i in range(config.num_layers)]
    return Model(config, layers, dtype, device)
