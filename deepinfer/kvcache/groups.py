"""Sequences attended together in one fused call of the batched path: block tables, query rows, masks.

Owns `Group` (B sequences, Tq query rows each, their KV blocks padded to the longest) and the
per-layer block gather. Knows nothing about requests or scheduling, nor about which attention
kernel reads the group (batched.py, decode.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Group:
    """B sequences, Tq query rows each (shorter ones padded), S key slots each (padding: block 0, masked)."""

    block_table: torch.Tensor       # [B, num_blocks] block ids
    q_index: torch.Tensor           # [B * Tq] rows of the packed q (padding repeats a sequence's last row)
    q_pos: torch.Tensor             # [B, Tq] absolute positions of the query rows
    tq: int
    masks: dict = field(default_factory=dict)  # (kind, window, dtype[, G]) -> additive mask [B, 1, Tq(*G), S]

    @classmethod
    def of(cls, members, block_size: int, tq: int | None = None) -> "Group":
        """members: (SeqSlice, offset of its first new token in the packed batch) pairs."""
        tq = tq or max(s.num_new for s, _ in members)
        blocks = max(-(-s.total // block_size) for s, _ in members)
        table = torch.zeros(len(members), blocks, dtype=torch.long)
        q_index = torch.empty(len(members), tq, dtype=torch.long)
        q_pos = torch.empty(len(members), tq, dtype=torch.long)
        for i, (s, offset) in enumerate(members):
            used = -(-s.total // block_size)
            table[i, :used] = torch.tensor(s.block_ids[:used], dtype=torch.long)
            rows = torch.arange(tq).clamp_(max=s.num_new - 1)          # padding repeats the last row
            q_index[i] = offset + rows
            q_pos[i] = s.num_cached + rows
        return cls(table, q_index.view(-1), q_pos, tq)

    @property
    def batch(self) -> int:
        return self.block_table.shape[0]

    def mask(self, window: int | None, dtype: torch.dtype, block_size: int) -> torch.Tensor:
        key = ("plain", window, dtype)
        if key not in self.masks:
            self.masks[key] = self._mask(window, dtype, block_size)
        return self.masks[key]

    def grouped_mask(self, window: int | None, dtype: torch.dtype, block_size: int, group: int) -> torch.Tensor:
        """The mask for query rows (token t, head g) at row t * G + g: [B, 1, Tq * G, S]."""
        if self.tq == 1:
            return self.mask(window, dtype, block_size)  # one row, broadcast over the G heads
        key = ("grouped", window, dtype, group)
        if key not in self.masks:
            self.masks[key] = self.mask(window, dtype, block_size).repeat_interleave(group, dim=2)
        return self.masks[key]

    def suffix_mask(self, dtype: torch.dtype, block_size: int, group: int, skip_blocks: int) -> torch.Tensor:
        """grouped_mask without its first `skip_blocks` blocks of keys (no window): [B, 1, Tq * G, S']."""
        key = ("suffix", dtype, group, skip_blocks)
        if key not in self.masks:
            full = self.grouped_mask(None, dtype, block_size, group)
            self.masks[key] = full[..., skip_blocks * block_size:].contiguous()
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


def gather(table: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor):
    """Blocks table [B, nb] of k/v_blocks [N, bs, Hkv, D] as [B, Hkv, nb * bs, D] (one copy per layer)."""
    flat = table.reshape(-1)
    batch, keys, hkv = table.shape[0], table.shape[1] * k_blocks.shape[1], k_blocks.shape[2]
    k = k_blocks.index_select(0, flat).view(batch, keys, hkv, -1).transpose(1, 2)
    v = v_blocks.index_select(0, flat).view(batch, keys, hkv, -1).transpose(1, 2)
    return k, v
