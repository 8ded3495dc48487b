"""Batched paged attention: every sequence of a forward pass in one fused attention call per group.

Owns the per-step plan (built once per forward, reused by every layer) and the per-layer call.
Sequences are split into two groups: decodes (at most `SHORT_CHUNK` new tokens each: one sampled
token, or one plus the tokens a constraint forced, see engine/jump_forward.py) and the rest
(prefill chunks).
Per group and layer, the sequences' KV blocks are gathered once into a padded
[B, Hkv, S, D] tensor and `F.scaled_dot_product_attention` runs once for the whole group,
with an additive mask (built once per step and sliding window) for causality, padding and windows.
No Python loop over sequences runs per layer.

Decode queries use the grouped-query layout [B, Hkv, Tq * G, D], where the G query heads that share
a kv head (times the Tq new tokens) are rows of one matrix (no copy of k/v per head). Padding query rows of a prefill group
repeat their sequence's last real token, so no row is fully masked (no NaN); their results are dropped.

When every decode shares leading prefix-cache blocks, those are read once for the whole group
(`cascade.py`).

Results are not batch invariant (the fused kernel's blocking depends on the padded shapes):
the invariant mode uses `kvcache/tiled.py`. Knows nothing about requests or scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from deepinfer.kvcache import cascade

# Sequences with at most this many new tokens attend in the decode group's grouped-query layout.
# Jump-forward steps feed a sampled token plus 1-3 forced ones; keeping them with the plain decodes
# gathers their KV once instead of in a second group (measured: a 34-token step with 2 groups took
# 0.39 s against 0.2 s for a 32-token step with one).
SHORT_CHUNK = 8


@dataclass
class Group:
    """Sequences attended together: B sequences, Tq query rows each (padded), S key slots each."""

    block_table: torch.Tensor       # [B, num_blocks] block ids (padding: block 0, masked)
    q_index: torch.Tensor           # [B * Tq] rows of the packed q
    q_pos: torch.Tensor             # [B, Tq] absolute positions of the query rows
    tq: int
    shared: cascade.SharedPrefix | None = None   # leading blocks read once per class (cascade.py)
    masks: dict = field(default_factory=dict)  # (window, dtype[, G]) -> additive mask [B, 1, Tq(*G), S]

    @property
    def batch(self) -> int:
        return self.block_table.shape[0]

    def mask(self, window: int | None, dtype: torch.dtype, block_size: int) -> torch.Tensor:
        key = (window, dtype)
        if key not in self.masks:
            self.masks[key] = self._mask(window, dtype, block_size)
        return self.masks[key]

    def grouped_mask(self, window: int | None, dtype: torch.dtype, block_size: int, group: int) -> torch.Tensor:
        """The mask for query rows (token t, head g) at row t * G + g: [B, 1, Tq * G, S]."""
        if self.tq == 1:
            return self.mask(window, dtype, block_size)  # one row, broadcast over the G heads
        key = (window, dtype, group)
        if key not in self.masks:
            self.masks[key] = self.mask(window, dtype, block_size).repeat_interleave(group, dim=2)
        return self.masks[key]

    def suffix_mask(self, dtype: torch.dtype, block_size: int, group: int) -> torch.Tensor:
        """grouped_mask without its first `shared` blocks of keys (no window): [B, 1, Tq * G, S']."""
        key = ("suffix", dtype, group)
        if key not in self.masks:
            full = self.grouped_mask(None, dtype, block_size, group)
            self.masks[key] = full[..., self.shared.blocks * block_size:].contiguous()
        return self.masks[key]

    def _mask(self, window: int | None, dtype: torch.dtype, block_size: int) -> torch.Tensor:
        num_keys = self.block_table.shape[1] * block_size
        kpos = torch.arange(num_keys).view(1, 1, num_keys)        # [1, 1, S]
        qpos = self.q_pos.unsqueeze(-1)                            # [B, Tq, 1]
        allowed = kpos <= qpos                                     # causal; also hides padding keys
        if window is not None:
            allowed &= kpos > qpos - window
        mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~allowed, float("-inf"))
        return mask.unsqueeze(1)                                   # [B, 1, Tq, S]


class BatchedPlan:
    """Which query rows and KV blocks each group reads, and where each token's output lands."""

    def __init__(self, seqs, block_size: int, num_tokens: int) -> None:
        self.block_size, self.num_tokens = block_size, num_tokens
        decode, rest, offset = [], [], 0
        for s in seqs:
            if s.num_new:
                (decode if s.num_new <= SHORT_CHUNK else rest).append((s, offset))
            offset += s.num_new
        self.groups = [self._group(members) for members in (decode, rest) if members]
        self.grouped = [members is decode for members in (decode, rest) if members]
        # Row of cat(group outputs) holding token t; None when that is already token order.
        self.inverse = self._inverse([(s, o) for members in (decode, rest) for s, o in members])

    def _group(self, members) -> Group:
        tq = max(s.num_new for s, _ in members)
        blocks = max(-(-s.total // self.block_size) for s, _ in members)
        table = torch.zeros(len(members), blocks, dtype=torch.long)
        q_index = torch.empty(len(members), tq, dtype=torch.long)
        q_pos = torch.empty(len(members), tq, dtype=torch.long)
        for i, (s, offset) in enumerate(members):
            used = -(-s.total // self.block_size)
            table[i, :used] = torch.tensor(s.block_ids[:used], dtype=torch.long)
            rows = torch.arange(tq).clamp_(max=s.num_new - 1)          # padding repeats the last row
            q_index[i] = offset + rows
            q_pos[i] = s.num_cached + rows
        group = Group(table, q_index.view(-1), q_pos, tq)
        if len(members) > 1 and tq <= SHORT_CHUNK:
            group.shared = cascade.shared_prefix([s.block_ids for s, _ in members],
                                                 [s.num_cached for s, _ in members], self.block_size)
        return group

    def _inverse(self, members) -> torch.Tensor | None:
        """members in group order; token t of the packed batch -> its row among the group outputs."""
        inverse = torch.empty(self.num_tokens, dtype=torch.long)
        row, natural, members = 0, True, iter(members)
        for g in self.groups:
            for _ in range(g.batch):
                s, offset = next(members)
                inverse[offset:offset + s.num_new] = torch.arange(row, row + s.num_new)
                natural &= offset == row and s.num_new == g.tq
                row += g.tq
        return None if natural and row == self.num_tokens else inverse

    @staticmethod
    def _gather(g: Group, k_blocks: torch.Tensor, v_blocks: torch.Tensor):
        """The group's blocks as [B, Hkv, S, D] keys and values (one copy per layer and step)."""
        flat = g.block_table.view(-1)
        keys = g.block_table.shape[1] * k_blocks.shape[1]
        hkv = k_blocks.shape[2]
        k = k_blocks.index_select(0, flat).view(g.batch, keys, hkv, -1).transpose(1, 2)
        v = v_blocks.index_select(0, flat).view(g.batch, keys, hkv, -1).transpose(1, 2)
        return k, v

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, *, scale: float,
               window: int | None) -> torch.Tensor:
        """q [T, H, Dk] (new tokens), pools [slots, Hkv, D] (already holding them) -> [T, H, Dv]."""
        hkv, dk, dv = k_pool.shape[1], k_pool.shape[2], v_pool.shape[2]
        heads, bs = q.shape[1], self.block_size
        k_blocks = k_pool.view(-1, bs, hkv, dk)
        v_blocks = v_pool.view(-1, bs, hkv, dv)
        outs = []
        for g, grouped in zip(self.groups, self.grouped):
            qg = q.index_select(0, g.q_index)                                                 # [B*Tq, H, Dk]
            if grouped:  # grouped-query rows: [B, Hkv, Tq * G, Dk] against one kv head each
                group = heads // hkv
                qg = qg.view(g.batch, g.tq, hkv, group, dk).transpose(1, 2).reshape(g.batch, hkv, -1, dk)
                if g.shared is not None and window is None and dk == dv:  # shared prefix read once (cascade.py)
                    mask = g.suffix_mask(q.dtype, bs, group)
                    out = cascade.attend(qg, k_blocks, v_blocks, g.block_table, g.shared, mask, scale)
                else:
                    k, v = self._gather(g, k_blocks, v_blocks)
                    mask = g.grouped_mask(window, q.dtype, bs, group)
                    out = F.scaled_dot_product_attention(qg, k, v, attn_mask=mask, scale=scale)
                out = out.view(g.batch, hkv, g.tq, group, dv).transpose(1, 2)                # [B, Tq, Hkv, G, Dv]
                outs.append(out.reshape(g.batch * g.tq, heads, dv))
            else:
                k, v = self._gather(g, k_blocks, v_blocks)
                mask = g.mask(window, q.dtype, bs)
                qg = qg.view(g.batch, g.tq, heads, dk).transpose(1, 2)                        # [B, H, Tq, Dk]
                out = F.scaled_dot_product_attention(qg, k, v, attn_mask=mask, scale=scale,
                                                     enable_gqa=heads != hkv)
                outs.append(out.transpose(1, 2).reshape(g.batch * g.tq, heads, dv))
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out if self.inverse is None else out.index_select(0, self.inverse)
