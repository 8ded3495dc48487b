"""Batch-invariant paged attention: every query row goes through one fixed kernel shape.

Owns the attention of the invariant mode. A query token's result must not depend on which other
tokens share the forward pass, nor on whether its prompt was prefilled at once, in chunks, or
found in the prefix cache. Invariance by construction:

- every query token is its own batch item of one `F.scaled_dot_product_attention` call, laid out
  [Hkv, G, D] (its G query heads per kv head), so the kernel's matrix shapes per row are fixed:
  M = G rows, K = head dim;
- its keys are padded (masked) to a multiple of `KV_CHUNK` = 512 slots, the CPU flash kernel's
  key block, so the online softmax always runs over full 512-key blocks in position order; blocks
  past the token's position are fully masked and add exact zeros.

Measured on this CPU (float32 and bfloat16, 1 and 2 threads): a row is bitwise identical for any
batch count, any padding to a multiple of 512, and in the prefill layout below; with keys padded
to 320 instead of 512 float32 rows differ, which is why the padding is fixed.

Decode tokens (one new token) are gathered together: one call per layer with their own KV.
A prefill chunk's tokens share their sequence's KV: it is gathered once and expanded (stride 0)
over the chunk's tokens, one call per prefilling sequence. Knows nothing about requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

KV_CHUNK = 512  # the CPU flash-attention kernel's key block (kvSplitSize)


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
        if decode:
            width = max(t.numel() for _, _, t in decode)
            table = torch.zeros(len(decode), width, dtype=torch.long)
            for i, (_, _, t) in enumerate(decode):
                table[i, :t.numel()] = t
            index = torch.tensor([o for o, _, _ in decode], dtype=torch.long)
            self.groups.insert(0, RowGroup(index, torch.tensor([p for _, p, _ in decode]), table))
            order.insert(0, index)
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
            qg, k, v = _same_head_dim(qg, k, v)
            out = F.scaled_dot_product_attention(qg, k, v, attn_mask=g.mask(window, q.dtype, keys), scale=scale)
            outs.append(out[..., :dv].reshape(n, heads, dv))
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out if self.inverse is None else out.index_select(0, self.inverse)


def _same_head_dim(q, k, v):
    """Zero-pad to one head dim (MLA has dk != dv): only then does the flash kernel run, and
    zero columns change no dot product and add only discarded output columns."""
    dk, dv = q.shape[-1], v.shape[-1]
    if dk > dv:
        v = F.pad(v, (0, dk - dv))
    elif dv > dk:
        q, k = F.pad(q, (0, dv - dk)), F.pad(k, (0, dv - dk))
    return q, k, v
