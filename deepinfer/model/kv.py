"""The KV cache contract between model code and whoever owns the memory.

Model layers never index cache tensors themselves: each attention layer hands
its new queries, keys and values to `KVCache.attend`, which stores the keys and
values for the new tokens and returns attention over everything cached so far.
A `DenseKVCache` serves one sequence (simple generation, tests); the engine
implements the same protocol over paged blocks for many sequences at once.

This module knows nothing about schedulers, requests or constraints.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch


class KVCache(Protocol):
    """What a model's attention layer needs from a cache.

    `attend` is called once per attention layer per forward pass, with the
    layer's projections for the new tokens of this forward pass:
      q: [num_tokens, num_heads, head_dim_qk]
      k: [num_tokens, num_kv_heads, head_dim_qk]
      v: [num_tokens, num_kv_heads, head_dim_v]
    and returns [num_tokens, num_heads, head_dim_v]: causal attention of each
    new token over the cached tokens of its own sequence plus the new ones up
    to itself (limited to the last `sliding_window` positions when given).
    Grouped-query attention: query head h reads kv head h // (num_heads // num_kv_heads).
    """

    def attend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               *, scale: float, sliding_window: int | None = None) -> torch.Tensor: ...


class DenseKVCache:
    """A growing, contiguous cache for one sequence (batch of one).

    Call `attend` for every layer of a forward pass, then the next forward
    pass continues after the tokens already stored. `num_tokens` counts the
    tokens cached (taken from layer 0). `keys[layer]` / `values[layer]` are
    views [num_tokens, num_kv_heads, head_dim] of buffers that grow by doubling,
    so a decode step copies only its new token.
    """

    def __init__(self, num_layers: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self._key_buffers: list[torch.Tensor | None] = [None] * num_layers
        self._value_buffers: list[torch.Tensor | None] = [None] * num_layers

    @property
    def num_tokens(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].shape[0]

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        past = 0 if self.keys[layer] is None else self.keys[layer].shape[0]
        total = past + k.shape[0]
        kbuf, vbuf = self._key_buffers[layer], self._value_buffers[layer]
        if kbuf is None or kbuf.shape[0] < total:
            capacity = max(total, 2 * (0 if kbuf is None else kbuf.shape[0]), 16)
            kbuf, vbuf = k.new_empty((capacity, *k.shape[1:])), v.new_empty((capacity, *v.shape[1:]))
            if past:
                kbuf[:past], vbuf[:past] = self.keys[layer], self.values[layer]
            self._key_buffers[layer], self._value_buffers[layer] = kbuf, vbuf
        kbuf[past:total], vbuf[past:total] = k, v
        self.keys[layer], self.values[layer] = kbuf[:total], vbuf[:total]
        return causal_attention(q, self.keys[layer], self.values[layer], past,
                                scale=scale, sliding_window=sliding_window)

    def truncate(self, num_tokens: int) -> None:
        """Forget every cached token at position >= num_tokens (rollback)."""
        for i, (k, v) in enumerate(zip(self.keys, self.values)):
            if k is not None:
                self.keys[i], self.values[i] = k[:num_tokens], v[:num_tokens]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, past: int, *,
                     scale: float, sliding_window: int | None = None) -> torch.Tensor:
    """Attention of new tokens q (positions past..past+T-1) over k/v (positions 0..S-1).

    q: [T, H, Dqk], k: [S, Hkv, Dqk], v: [S, Hkv, Dv] -> [T, H, Dv].
    Scores and weighted sums in the input dtype, softmax in float32 (as transformers'
    eager attention). The row reductions do not depend on other sequences (batch invariant).
    """
    num_new, num_heads, _ = q.shape
    num_keys, num_kv_heads = k.shape[0], k.shape[1]
    group = num_heads // num_kv_heads
    # Query head h reads kv head h // group: view q as [Hkv, group, T, D] and broadcast
    # k/v over the group instead of copying them group times.
    qg = q.view(num_new, num_kv_heads, group, -1).permute(1, 2, 0, 3)  # [Hkv, G, T, Dqk]
    kt = k.permute(1, 2, 0).unsqueeze(1)  # [Hkv, 1, Dqk, S]
    scores = torch.matmul(qg, kt) * scale  # [Hkv, G, T, S]
    if num_new > 1 or (sliding_window is not None and num_keys > sliding_window):
        q_pos = torch.arange(past, past + num_new, device=q.device).unsqueeze(1)  # [T, 1]
        k_pos = torch.arange(num_keys, device=q.device).unsqueeze(0)  # [1, S]
        allowed = k_pos <= q_pos
        if sliding_window is not None:
            allowed &= k_pos > q_pos - sliding_window
        scores = scores.masked_fill(~allowed, -math.inf)
    probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    out = torch.matmul(probs, v.permute(1, 0, 2).unsqueeze(1))  # [Hkv, G, T, Dv]
    return out.permute(2, 0, 1, 3).reshape(num_new, num_heads, -1)
