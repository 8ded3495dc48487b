"""Batch-invariant paged attention (PyTorch): every query row is computed on its own, the same way.

Owns the attention of the invariant mode where the native kernel does not run. A query token's
result must not depend on which other tokens share the forward pass, nor on whether its prompt was
prefilled at once, in chunks, or found in the prefix cache. Invariance by construction:
- every query token is its own batch item, laid out [Hkv, G, D] (its G query heads per kv head);
- its keys are its own sequence's, padded (masked) to a multiple of `KV_CHUNK` = 512 slots, so a
  row's key count depends only on its own sequence; decode tokens are grouped by that count;
- the arithmetic is products and sums (`_rowwise_attention`), whose reductions run in a fixed
  order per row. The SDPA kernel used before was invariant on one CPU but not on another (an AMD
  EPYC: the last bit of a row changed with the batch count and with the thread count).
Decode tokens (one new token) are gathered together: one call per key count with their own KV.
A prefill chunk's tokens share their sequence's KV: it is gathered once and expanded (stride 0)
over the chunk's tokens. Knows nothing about requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

KV_CHUNK = 512  # keys are padded to a multiple of this (a row's key count never depends on the batch)
ROWS = 16  # query tokens per product-and-sum pass (_rowwise_attention)


@dataclass
class RowGroup:
    """Query tokens attended in one call: N tokens, each over `blocks` KV blocks (shared or not)."""

    q_index: torch.Tensor            # [N] rows of the packed q
    q_pos: torch.Tensor              # [N] absolute positions
    block_table: torch.Tensor        # [B, blocks], B = N (decode) or 1 (one prefilling sequence)
    masks: dict = field(default_factory=dict)  # (window, dtype) -> additive mask [N, 1, 1, S]

    def mask(self, window: int | None, dtype: torch.dtype, num_keys: int) -> torch.Tensor:
        key = (window, dtype)
        if key not in self.masks:
            kpos = torch.arange(num_keys).view(1, num_keys)
            qpos = self.q_pos.view(-1, 1)
            allowed = kpos <= qpos
            if window is not None:
                allowed &= kpos > qpos - window
            mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~allowed, float("-inf"))
            self.masks[key] = mask.view(-1, 1, 1, num_keys)
        return self.masks[key]


class InvariantPlan:
    def __init__(self, seqs, block_size: int, num_tokens: int) -> None:
        if KV_CHUNK % block_size:
            raise ValueError(f"block_size {block_size} must divide {KV_CHUNK} in the batch-invariant mode")
        self.block_size, self.num_tokens = block_size, num_tokens
        per_chunk = KV_CHUNK // block_size
        decode, self.groups, order, offset = [], [], [], 0
        for s in seqs:
            blocks = -(-s.total // KV_CHUNK) * per_chunk
            table = torch.zeros(blocks, dtype=torch.long)  # padding: block 0, masked
            used = -(-s.total // block_size)
            table[:used] = torch.tensor(s.block_ids[:used], dtype=torch.long)
            if s.num_new == 1:
                decode.append((offset, s.num_cached, table))
            elif s.num_new > 1:
                index = torch.arange(offset, offset + s.num_new)
                self.groups.append(RowGroup(index, torch.arange(s.num_cached, s.total), table.view(1, -1)))
                order.append(index)
            offset += s.num_new
        widths: dict[int, list] = {}  # decodes by their own padded width: a row never sees another's
        for d in decode:
            widths.setdefault(d[2].numel(), []).append(d)
        for at, (_, rows) in enumerate(sorted(widths.items())):
            table = torch.stack([t for _, _, t in rows])
            index = torch.tensor([o for o, _, _ in rows], dtype=torch.long)
            self.groups.insert(at, RowGroup(index, torch.tensor([p for _, p, _ in rows]), table))
            order.insert(at, index)
        order = torch.cat(order)
        self.inverse = None if torch.equal(order, torch.arange(num_tokens)) else torch.argsort(order)

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, *, scale: float,
               window: int | None) -> torch.Tensor:
        """q [T, H, Dk], pools [slots, Hkv, D] (already holding the new tokens) -> [T, H, Dv]."""
        hkv, dk, dv = k_pool.shape[1], k_pool.shape[2], v_pool.shape[2]
        heads, bs = q.shape[1], self.block_size
        k_blocks, v_blocks = k_pool.view(-1, bs, hkv, dk), v_pool.view(-1, bs, hkv, dv)
        outs = []
        for g in self.groups:
            batch, width = g.block_table.shape
            keys, n = width * bs, g.q_index.numel()
            flat = g.block_table.view(-1)
            k = k_blocks.index_select(0, flat).view(batch, keys, hkv, dk).transpose(1, 2)  # [B, Hkv, S, Dk]
            v = v_blocks.index_select(0, flat).view(batch, keys, hkv, dv).transpose(1, 2)
            if batch != n:  # one prefilling sequence: its KV shared by its n tokens
                k, v = k.expand(n, -1, -1, -1), v.expand(n, -1, -1, -1)
            qg = q.index_select(0, g.q_index).view(n, hkv, heads // hkv, dk)               # [N, Hkv, G, Dk]
            out = _rowwise_attention(qg, k, v, g.mask(window, q.dtype, keys), scale)
            outs.append(out.reshape(n, heads, dv))
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out if self.inverse is None else out.index_select(0, self.inverse)


def _rowwise_attention(q, k, v, mask, scale: float) -> torch.Tensor:
    """q [N, Hkv, G, Dk], k [N, Hkv, S, Dk], v [N, Hkv, S, Dv], mask [N, 1, 1, S] -> [N, Hkv, G, Dv].

    Products and sums, not a GEMM or the SDPA kernel: PyTorch's CPU reductions run a fixed order
    per row over contiguous data, whatever N and the thread count, while SDPA and matmul pick
    their blocking from the batch and the threads (measured on an AMD EPYC: a row differed in
    the last bit alone vs in a batch, and at 1 vs 2 threads). Rows go ROWS at a time, which
    bounds the [rows, Hkv, G, S, D] temporaries."""
    outs = []
    for lo in range(0, q.shape[0], ROWS):
        sl = slice(lo, lo + ROWS)
        scores = (q[sl].unsqueeze(-2) * k[sl].unsqueeze(-3)).sum(-1) * scale + mask[sl]   # [n, Hkv, G, S]
        probs = torch.softmax(scores, dim=-1)
        outs.append((probs.unsqueeze(-1) * v[sl].unsqueeze(-3)).sum(-2))                   # [n, Hkv, G, Dv]
    return outs[0] if len(outs) == 1 else torch.cat(outs)
