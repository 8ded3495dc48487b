"""Numeric building blocks of DeepSeek-V4, with transformers 5.x's dtype rules.

- `norm`: RMSNorm whose weight stays float32 (transformers keeps V4's norms in float32)
  and whose product is rounded back to the activation dtype once.
- `unit_norm`: the unweighted RMSNorm of the queries and of the hyper-connection input.
- `RopeTable` / `rotate`: V4's interleaved rotary on the *trailing* `rope_dim` channels
  of each head, pairs (x0, x1), (x2, x3), ... rotated in place (no de-interleaving: K is
  also V, and the attention output is rotated back with the conjugate angle).
- `grouped_linear`: the block-diagonal first half of the grouped output projection.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from deepinfer.model.layers import rms_norm
from deepinfer.model.rope import RopeConfig, inverse_frequencies


def norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x [..., D] -> weight * x / rms(x), computed in float32, returned in x's dtype."""
    if x.dtype == torch.float32:
        return rms_norm(x, weight, eps)
    x32 = x.float()
    return (weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))).to(x.dtype)


def unit_norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / rms(x) over the last dimension; the factor is rounded to x's dtype first, as transformers does."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), None, eps)
    return x * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + eps).to(x.dtype)


class RopeTable:
    """cos/sin of one rotary configuration for explicit positions."""

    def __init__(self, rope: RopeConfig, device: torch.device) -> None:
        if rope.rope_type not in ("default", "yarn"):
            raise ValueError(f"DeepSeek-V4 rotary must be default or yarn, got {rope.rope_type!r}")
        self.rope = rope
        inv_freq, self.attention_factor = inverse_frequencies(rope)
        self.inv_freq = inv_freq.to(device)

    def cos_sin(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [T] -> cos, sin [T, rope_dim // 2] in `dtype` (one angle per channel pair)."""
        freqs = positions[:, None].float() * self.inv_freq
        return ((freqs.cos() * self.attention_factor).to(dtype),
                (freqs.sin() * self.attention_factor).to(dtype))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the trailing 2 * cos.shape[-1] channels of x [..., D] by pairs, in float32.

    cos/sin broadcast against x[..., ::2] of the rotated part (e.g. [T, 1, R/2] for x [T, H, D]).
    Pass -sin to undo a rotation.
    """
    rope_dim = 2 * cos.shape[-1]
    rot = x[..., -rope_dim:].float()
    even, odd = rot[..., 0::2], rot[..., 1::2]
    cos, sin = cos.float(), sin.float()
    rotated = torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
    return torch.cat([x[..., :-rope_dim], rotated.to(x.dtype)], dim=-1)


def grouped_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x [T, G, in_g], weight [G, out_g, in_g] -> [T, G, out_g]: group g multiplies by weight[g] only.

    Like layers.linear, a float32 weight of a bfloat16 model multiplies the widened
    activations and rounds the result back once.
    """
    out = torch.bmm(x.transpose(0, 1).to(weight.dtype), weight.transpose(1, 2))  # [G, T, out_g]
    return out.transpose(0, 1).to(x.dtype)
