"""The decoder skeleton shared by every architecture, and the `Model.forward` contract.

Owns: embeddings -> pre-norm residual layers -> final norm -> vocabulary logits,
with rotary cos/sin computed once per forward from explicit positions. An
architecture supplies only its layers (attention + MLP). Knows nothing about
sequences, requests or scheduling: the KV cache object decides which cached
tokens each new token sees.
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.config import ModelConfig
from deepinfer.model.kv import KVCache
from deepinfer.model.layers import Embedding, RMSNorm, Weights
from deepinfer.model.rope import RotaryEmbedding


class DecoderLayer(nn.Module):
    """h + attn(norm(h)), then h + mlp(norm(h)); `attn` and `mlp` come from the architecture."""

    def __init__(self, config: ModelConfig, attn: nn.Module, mlp: nn.Module) -> None:
        super().__init__()
        self.input_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.attn, self.mlp = attn, mlp

    def load(self, weights: Weights, prefix: str) -> None:
        self.input_norm.load(weights, prefix + "input_layernorm.")
        self.post_attention_norm.load(weights, prefix + "post_attention_layernorm.")
        self.attn.load(weights, prefix + "self_attn.")
        self.mlp.load(weights, prefix + "mlp.")

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache) -> torch.Tensor:
        # The sublayers return fresh tensors: add the residual into them instead of allocating.
        h = self.attn(self.input_norm(h), cos, sin, cache).add_(h)
        return self.mlp(self.post_attention_norm(h)).add_(h)


class Model(nn.Module):
    """A causal language model over flattened tokens.

    forward(input_ids [T], positions [T], cache, logits_indices [N] | None) -> float32 [N or T, vocab]
    Tokens may belong to several sequences; rotary angles use `positions`, and the
    cache routes each token's attention to its own sequence.
    """

    def __init__(self, config: ModelConfig, layers: list[DecoderLayer], dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        super().__init__()
        self.config, self.dtype, self.device = config, dtype, torch.device(device)
        self.embedding = Embedding(config.vocab_size, config.hidden_size, config.tie_word_embeddings)
        self.layers = nn.ModuleList(layers)
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary = RotaryEmbedding(config.rope, self.device)

    def load(self, weights: Weights) -> None:
        """Take every tensor from `weights` by its Hugging Face name."""
        self.embedding.load(weights, "model.embed_tokens.weight", "lm_head.weight")
        for i, layer in enumerate(self.layers):
            layer.load(weights, f"model.layers.{i}.")
        self.norm.load(weights, "model.norm.")

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, cache: KVCache,
                logits_indices: torch.Tensor | None = None) -> torch.Tensor:
        h = self.embedding.embed_tokens(input_ids)  # [T, hidden]
        cos, sin = self.rotary.cos_sin(positions, h.dtype)  # [T, 1, rope_dim] each
        for layer in self.layers:
            h = layer(h, cos, sin, cache)
        if logits_indices is not None:
            h = h.index_select(0, logits_indices)  # [N, hidden]: the norm is per row, so select first
        return self.embedding.logits(self.norm(h))
