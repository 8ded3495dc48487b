"""Decode attention of the batched path: sequences with a few new tokens each, without padded rows.

Owns the decode part of a `BatchedPlan`: sequences with at most `SHORT_CHUNK` new tokens (a
sampled token, plus forced or draft tokens). Their query rows use the grouped-query layout
(the G query heads that share a kv head are rows of one matrix, no copy of k/v per head).

Sequences are bucketed by their number of new tokens, so no query row is padding (padding every
sequence to the longest one computed 2.2x the real rows over the extraction benchmark, where
most decodes have 1 new token and a few carry 4-6 draft or forced tokens). Each bucket gathers
its sequences' blocks once per layer into a padded [B, Hkv, S, D] tensor (keys past a sequence's
end are masked).

When the decodes share leading prefix-cache blocks (`cascade.py`), the shared keys are attended
once for all rows of all buckets, each bucket attends only its own suffix, and the two partial
results merge by log-sum-exp. Not batch invariant. Knows nothing about requests or scheduling.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from deepinfer.kvcache import cascade
from deepinfer.kvcache.groups import Group, gather


class DecodeSet:
    """The decode sequences of one forward pass, in output order (by new tokens, then input order)."""

    def __init__(self, members, block_size: int) -> None:
        self.block_size = block_size
        self.members = sorted(members, key=lambda m: m[0].num_new)      # stable: input order within a bucket
        self.q_index = torch.cat([torch.arange(o, o + s.num_new) for s, o in self.members])   # [N]
        self.num_rows = self.q_index.numel()
        self.buckets: list[tuple[int, int, Group]] = []                 # (first row, tq, group)
        start = 0
        for tq in sorted({s.num_new for s, _ in self.members}):
            bucket = [m for m in self.members if m[0].num_new == tq]
            self.buckets.append((start, tq, Group.of(bucket, block_size, tq)))
            start += tq * len(bucket)
        self.shared = None
        if len(self.members) > 1:
            self.shared = cascade.shared_prefix([s.block_ids for s, _ in self.members],
                                                [s.num_cached for s, _ in self.members], block_size)
        if self.shared is not None:  # class members as row indices, for the shared-prefix attention
            rows = torch.cumsum(torch.tensor([0] + [s.num_new for s, _ in self.members]), 0)
            self.class_rows = [None if m.numel() == len(self.members) else
                               torch.cat([torch.arange(rows[i], rows[i + 1]) for i in m.tolist()])
                               for m, _ in self.shared.classes]

    def attend(self, q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, *, scale: float,
               window: int | None) -> torch.Tensor:
        """q [T, H, Dk] (all new tokens), blocks [N, bs, Hkv, D] -> [num_rows, H, Dv] in member order."""
        hkv, dk, dv = k_blocks.shape[2], k_blocks.shape[3], v_blocks.shape[3]
        heads = q.shape[1]
        group = heads // hkv
        qd = q.index_select(0, self.q_index).view(self.num_rows, hkv, group, dk)      # [N, Hkv, G, Dk]
        if self.shared is not None and window is None and dk == dv:
            out = self._cascade(qd, k_blocks, v_blocks, scale)
        else:
            out = qd.new_empty(self.num_rows, hkv, group, dv)
            for start, tq, g in self.buckets:
                qb = _bucket_rows(qd, start, g.batch, tq)                              # [B, Hkv, tq*G, Dk]
                k, v = gather(g.block_table, k_blocks, v_blocks)
                mask = g.grouped_mask(window, q.dtype, self.block_size, group)
                ob = F.scaled_dot_product_attention(qb, k, v, attn_mask=mask, scale=scale)
                _put_rows(out, ob, start, g.batch, tq)
        return out.reshape(self.num_rows, heads, dv)

    def _cascade(self, qd, k_blocks, v_blocks, scale):
        """Shared prefix once for all rows, own suffix per bucket, merged: [N, Hkv, G, D]."""
        num_rows, hkv, group, d = qd.shape
        shared, bs = self.shared, self.block_size
        if self.class_rows[0] is None:  # one class: every row reads the same prefix blocks
            out_p, lse_p = cascade.prefix_attention(qd, k_blocks, v_blocks, shared.classes[0][1], scale)
        else:
            out_p = qd.new_empty(num_rows, hkv, group, d)
            lse_p = torch.empty(num_rows, hkv, group, dtype=torch.float32)
            for rows, (_, blocks) in zip(self.class_rows, shared.classes):
                o, lse = cascade.prefix_attention(qd.index_select(0, rows), k_blocks, v_blocks, blocks, scale)
                out_p.index_copy_(0, rows, o)
                lse_p.index_copy_(0, rows, lse)
        out_s = qd.new_empty(num_rows, hkv, group, d)
        lse_s = torch.empty(num_rows, hkv, group, dtype=torch.float32)
        for start, tq, g in self.buckets:
            qb = _bucket_rows(qd, start, g.batch, tq)                                  # [B, Hkv, tq*G, D]
            k, v = gather(g.block_table[:, shared.blocks:], k_blocks, v_blocks)
            mask = g.suffix_mask(qd.dtype, bs, group, shared.blocks)
            o, lse = cascade.flash(qb, k, v, attn_mask=mask, scale=scale)
            _put_rows(out_s, o, start, g.batch, tq)
            lse_s[start:start + g.batch * tq].view(g.batch, tq, hkv, group).copy_(
                lse.view(g.batch, hkv, tq, group).transpose(1, 2))
        return cascade.merge(out_p, lse_p, out_s, lse_s)


def _bucket_rows(qd: torch.Tensor, start: int, batch: int, tq: int) -> torch.Tensor:
    """Rows [start, start + batch * tq) of qd [N, Hkv, G, D] as [batch, Hkv, tq * G, D] (row t * G + g)."""
    _, hkv, group, d = qd.shape
    rows = qd[start:start + batch * tq].view(batch, tq, hkv, group, d)
    return rows.transpose(1, 2).reshape(batch, hkv, tq * group, d)


def _put_rows(out: torch.Tensor, o: torch.Tensor, start: int, batch: int, tq: int) -> None:
    """Write a bucket's result o [batch, Hkv, tq * G, D] back into rows of out [N, Hkv, G, D]."""
    _, hkv, group, d = out.shape
    out[start:start + batch * tq].view(batch, tq, hkv, group, d).copy_(
        o.view(batch, hkv, tq, group, d).transpose(1, 2))
