"""Counter-based Gumbel noise: a pure function of (seed, position, token id).

No generator state is shared between requests or steps, so a request's draws
do not depend on what else is batched with it, on preemption, or on how many
draws other requests consumed. The hash is murmur3's 64-bit finalizer in int64
torch arithmetic (multiplication wraps; right shifts are made logical by masking).
"""

from __future__ import annotations

import torch

_M1 = -49064778989728563    # 0xff51afd7ed558ccd as int64
_M2 = -4265267296055464877  # 0xc4ceb9fe1a85ec53 as int64
_GOLDEN = -7046029254386353131  # 0x9e3779b97f4a7c15 as int64


def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 values."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def fmix64(x: torch.Tensor) -> torch.Tensor:
    x = x ^ _shr(x, 33)
    x = x * _M1
    x = x ^ _shr(x, 33)
    x = x * _M2
    return x ^ _shr(x, 33)


def uniform(seeds: torch.Tensor, positions: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Uniform (0, 1) float64 noise [B, V] for rows keyed by seeds [B] and positions [B] (int64)."""
    row = fmix64(fmix64(seeds.long() * _GOLDEN + 1) ^ positions.long())      # [B]
    token = torch.arange(vocab_size, dtype=torch.long) * _GOLDEN             # [V]
    bits = fmix64(row.unsqueeze(1) ^ fmix64(token).unsqueeze(0))             # [B, V]
    return (_shr(bits, 11).double() + 0.5) / float(1 << 53)


def gumbel(seeds: torch.Tensor, positions: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Gumbel(0, 1) float64 noise [B, V]: argmax(logits / T + noise) samples softmax(logits / T)."""
    return -torch.log(-torch.log(uniform(seeds, positions, vocab_size)))


def derive_seed(seed: int, index: int) -> int:
    """Seed of the index-th of n completions (index 0 keeps the request's seed)."""
    if index == 0:
        return seed
    value = fmix64(torch.tensor([seed * 1000003 + index], dtype=torch.long))
    return int(value.item()) & ((1 << 63) - 1)
