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
    tokens cached (taken from layer 0).
    """

    def __init__(self, num_layers: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    @property
    def num_tokens(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].shape[0]

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        past = 0 if self.keys[layer] is None else self.keys[layer].shape[0]
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k])
            self.values[layer] = torch.cat([self.values[layer], v])
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
    The row reductions do not depend on other sequences (batch invariant).
    """
    num_new, num_heads, _ = q.shape
    num_kv_heads = k.shape[1]
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)  # [S, H, Dqk]
    v = v.repeat_interleave(group, dim=1)  # [S, H, Dv]
    scores = torch.einsum("thd,shd->hts", q, k) * scale  # [H, T, S]
    q_pos = torch.arange(past, past + num_new).unsqueeze(1)  # [T, 1]
    k_pos = torch.arange(k.shape[0]).unsqueeze(0)  # [1, S]
    allowed = k_pos <= q_pos
    if sliding_window is not None:
        allowed &= k_pos > q_pos - sliding_window
    scores = scores.masked_fill(~allowed, -math.inf)
    probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    return torch.einsum("hts,shd->thd", probs, v)
