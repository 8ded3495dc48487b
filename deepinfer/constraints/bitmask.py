"""Token bitmasks as torch tensors: allocate and apply (the only torch user).

A bitmask is int32 [batch, ceil(V/32)]; bit (i % 32) of word i // 32 is token
i (little-endian, as xgrammar and llguidance), 1 = allowed.
"""

from __future__ import annotations

import torch


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> torch.Tensor:
    """int32 [batch_size, ceil(vocab_size/32)], all tokens allowed."""
    return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)


_SHIFTS: dict[torch.device, torch.Tensor] = {}


def unpack_bitmask(bitmask: torch.Tensor, width: int) -> torch.Tensor:
    """bool [batch, width] from int32 [batch, words] (bits past the mask are False)."""
    shifts = _SHIFTS.get(bitmask.device)
    if shifts is None:
        shifts = _SHIFTS[bitmask.device] = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = ((bitmask.unsqueeze(-1) >> shifts) & 1).bool()     # [batch, words, 32]
    bits = bits.reshape(bitmask.shape[0], -1)                  # [batch, words*32]
    if bits.shape[1] >= width:
        return bits[:, :width]
    pad = torch.zeros(bits.shape[0], width - bits.shape[1], dtype=torch.bool, device=bits.device)
    return torch.cat([bits, pad], dim=1)


def apply_token_bitmask_inplace(logits: torch.Tensor, bitmask: torch.Tensor,
                                indices=None) -> None:
    """Set logits of disallowed tokens to -inf, in place.

    logits: float [batch, V'] or [V']; bitmask: int32 [batch, words] or [words].
    `indices` (optional) lists the rows of both to mask (the others are left alone).
    Logit columns past the mask (V' > words*32) are disallowed.
    """
    squeeze = logits.dim() == 1
    rows = logits.unsqueeze(0) if squeeze else logits
    mask = bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask
    mask = mask.to(rows.device, non_blocking=True)
    if indices is not None:
        idx = torch.as_tensor(indices, dtype=torch.long, device=rows.device)
        allowed = unpack_bitmask(mask.index_select(0, idx), rows.shape[-1])
        sub = rows.index_select(0, idx).masked_fill_(~allowed, float("-inf"))
        rows.index_copy_(0, idx, sub)
        return
    allowed = unpack_bitmask(mask[: rows.shape[0]], rows.shape[-1])
    rows.masked_fill_(~allowed, float("-inf"))
