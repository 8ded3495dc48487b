"""Batched paged attention: every sequence of a forward pass in a few fused attention calls per layer.

Owns the per-step plan (built once per forward, reused by every layer) and the per-layer call.
Sequences are split into decodes (at most `SHORT_CHUNK` new tokens each: one sampled token, plus
the tokens a constraint forced (engine/speculation/jump_forward.py) or a draft to verify) and the rest
(prefill chunks). Decodes attend in `decode.py` (bucketed by new tokens, no padded query rows; a
shared prefix read once, `cascade.py`). Where the native kernel builds on its vectorized path the
paged cache uses `native_decode.NativePlan` instead of this plan (paged.py says why). Each prefill
chunk gathers its KV blocks once per layer and runs one `F.scaled_dot_product_attention` with an
additive mask (built once per step and sliding window) for causality and windows. Masks and block
tables are built once per step; per layer, Python loops only over the (few) prefill chunks.

Results are not batch invariant (the fused kernel's blocking depends on the padded shapes): the
invariant mode uses `native_decode.NativePlan` or `invariant.py`. Knows nothing about requests or
scheduling.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from deepinfer.kvcache.cascade import widen
from deepinfer.kvcache.decode import DecodeSet
from deepinfer.kvcache.groups import Group, gather

# Sequences with at most this many new tokens attend as decodes (decode.py: grouped-query layout,
# shared prefix read once). Jump-forward and verification steps feed a sampled token plus forced or
# draft ones; in the padded prefill group they would pay for its longest chunk (measured: a
# 34-token step with 2 groups took 0.39 s against 0.2 s for a 32-token step with one).
SHORT_CHUNK = 8


class BatchedPlan:
    """Which query rows and KV blocks each call reads, and where each token's output lands."""

    def __init__(self, seqs, block_size: int, num_tokens: int) -> None:
        self.block_size, self.num_tokens = block_size, num_tokens
        decode, rest, offset = [], [], 0
        for s in seqs:
            if s.num_new:
                (decode if s.num_new <= SHORT_CHUNK else rest).append((s, offset))
            offset += s.num_new
        self.decodes = DecodeSet(decode, block_size) if decode else None
        # One call per prefill chunk: padding chunks to the longest one cost 24% more attention
        # over the extraction benchmark's prefill steps (their chunks differ in length and context).
        self.prefills = [(offset, s.num_new, Group.of([(s, offset)], block_size)) for s, offset in rest]
        # Output rows: the decodes' (in their order), then the prefill chunks' (in input order).
        placed = (self.decodes.members if self.decodes is not None else []) + rest
        # Row of cat(outputs) holding token t; None when that is already token order.
        self.inverse = self._inverse(placed)

    def _inverse(self, placed) -> torch.Tensor | None:
        """placed: (seq, offset of its first new token) in output order."""
        inverse = torch.empty(self.num_tokens, dtype=torch.long)
        row, natural = 0, True
        for s, offset in placed:
            inverse[offset:offset + s.num_new] = torch.arange(row, row + s.num_new)
            natural &= offset == row
            row += s.num_new
        return None if natural and row == self.num_tokens else inverse

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, *, scale: float,
               window: int | None) -> torch.Tensor:
        """q [T, H, Dk] (new tokens), pools [slots, Hkv, D] (already holding them) -> [T, H, Dv]."""
        hkv, dk, dv = k_pool.shape[1], k_pool.shape[2], v_pool.shape[2]
        bs = self.block_size
        k_blocks = k_pool.view(-1, bs, hkv, dk)
        v_blocks = v_pool.view(-1, bs, hkv, dv)
        outs = []
        if self.decodes is not None:
            outs.append(self.decodes.attend(q, k_blocks, v_blocks, scale=scale, window=window))
        for offset, n, g in self.prefills:
            outs.append(self._prefill(q, k_blocks, v_blocks, offset, n, g, scale, window).to(q.dtype))
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out if self.inverse is None else out.index_select(0, self.inverse)

    def _prefill(self, q, k_blocks, v_blocks, offset, n, g, scale, window) -> torch.Tensor:
        """One prefill chunk's rows [n, H, Dv] (float32 for bfloat16 inputs: `widen`)."""
        heads, hkv = q.shape[1], k_blocks.shape[2]
        k, v = gather(g.block_table, k_blocks, v_blocks)                                    # [1, Hkv, S, D]
        qg = q[offset:offset + n].unsqueeze(0).transpose(1, 2)                              # [1, H, n, Dk]
        qg, k, v = widen(qg, k, v)
        out = F.scaled_dot_product_attention(qg, k, v, attn_mask=g.mask(window, qg.dtype, self.block_size),
                                             scale=scale, enable_gqa=heads != hkv)
        return out[0].transpose(0, 1)                                                       # [n, H, Dv]

