"""Rotary position embeddings: their config, frequencies for each scaling variant, and their application.

Owns the `rope_parameters` / legacy `rope_scaling` config fields and the math of
default, linear, dynamic-NTK, llama3 and yarn rotary embeddings,
bit-compatible with transformers 5.x, and the two layouts (rotate-half, and
DeepSeek's interleaved pairs). Angles come from explicit per-token positions,
never from an arange, so tokens of several sequences can share one forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")


@dataclass(frozen=True)
class RopeConfig:
    """Rotary embedding parameters (transformers' `rope_parameters`, standardized)."""

    rope_type: str  # one of ROPE_TYPES
    theta: float
    dim: int  # rotated dimensions per head
    max_position_embeddings: int
    interleaved: bool = False  # DeepSeek layout: rotate pairs (x0, x1), (x2, x3), ...
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    low_freq_factor: float | None = None  # llama3
    high_freq_factor: float | None = None  # llama3
    beta_fast: float | None = None  # yarn
    beta_slow: float | None = None  # yarn
    mscale: float | None = None  # yarn
    mscale_all_dim: float | None = None  # yarn
    attention_factor: float | None = None  # yarn
    truncate: bool = True  # yarn


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def parse_rope(f: Any, dim: int, max_pos: int, interleaved: bool) -> RopeConfig:
    """Standardize `rope_parameters` (v5) or legacy `rope_scaling` + `rope_theta` (v4 configs).

    `f` is config.py's field reader over the whole config.json; errors name the field.
    """
    params = f.raw.get("rope_parameters") or f.raw.get("rope_scaling") or {}
    field = "rope_parameters" if f.raw.get("rope_parameters") else "rope_scaling"
    if not isinstance(params, dict):
        raise f.fail(field, f"must be an object, got {params!r}")
    sub = type(f)(params, f"{f.source} ({field})")
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise f.fail(field, f"has rope_type {rope_type!r}; supported: {', '.join(ROPE_TYPES)}")
    theta = sub.optional("rope_theta", float, f.optional("rope_theta", float, 10000.0))
    partial = sub.optional("partial_rotary_factor", float, f.optional("partial_rotary_factor", float, 1.0))
    if partial != 1.0:
        raise f.fail("partial_rotary_factor", f"is {partial}; partial rotary embeddings are not supported")
    original = None
    if rope_type in ("llama3", "yarn"):
        # transformers gives a top-level original_max_position_embeddings priority (Phi3 style).
        original = f.optional("original_max_position_embeddings", int,
                              sub.optional("original_max_position_embeddings", int, max_pos))
    needs_factor = rope_type in ("linear", "dynamic", "llama3")
    factor = sub.required("factor", float) if needs_factor else sub.optional("factor", float, None)
    if rope_type == "yarn" and factor is None:
        factor = max_pos / original  # transformers' fallback for a yarn config without a factor
    return RopeConfig(
        rope_type=rope_type, theta=theta, dim=dim, max_position_embeddings=max_pos, interleaved=interleaved,
        factor=factor, original_max_position_embeddings=original,
        low_freq_factor=sub.required("low_freq_factor", float) if rope_type == "llama3" else None,
        high_freq_factor=sub.required("high_freq_factor", float) if rope_type == "llama3" else None,
        beta_fast=sub.optional("beta_fast", float, None), beta_slow=sub.optional("beta_slow", float, None),
        mscale=sub.optional("mscale", float, None), mscale_all_dim=sub.optional("mscale_all_dim", float, None),
        attention_factor=sub.optional("attention_factor", float, None),
        truncate=sub.optional("truncate", bool, True))


def inverse_frequencies(rope: RopeConfig, seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """Returns (inv_freq [dim // 2] float32, attention_factor scaling cos and sin)."""
    dim, base = rope.dim, rope.theta
    exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    if rope.rope_type == "dynamic":
        # NTK-aware base stretch, only once the sequence outgrows the trained length.
        seq_len = max(seq_len or 0, rope.max_position_embeddings)
        stretch = (rope.factor * seq_len / rope.max_position_embeddings) - (rope.factor - 1)
        base = base * stretch ** (dim / (dim - 2))
        return 1.0 / (base ** exponents), 1.0
    inv_freq = 1.0 / (base ** exponents)
    if rope.rope_type == "linear":
        return inv_freq / rope.factor, 1.0
    if rope.rope_type == "llama3":
        return _llama3(inv_freq, rope), 1.0
    if rope.rope_type == "yarn":
        return _yarn(rope)
    return inv_freq, 1.0


def _llama3(inv_freq: torch.Tensor, rope: RopeConfig) -> torch.Tensor:
    factor, low, high = rope.factor, rope.low_freq_factor, rope.high_freq_factor
    old_len = rope.original_max_position_embeddings
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


def _yarn(rope: RopeConfig) -> tuple[torch.Tensor, float]:
    dim, base, factor = rope.dim, rope.theta, rope.factor
    original = rope.original_max_position_embeddings
    attention_factor = rope.attention_factor
    if attention_factor is None:
        if rope.mscale and rope.mscale_all_dim:
            attention_factor = float(yarn_get_mscale(factor, rope.mscale)
                                     / yarn_get_mscale(factor, rope.mscale_all_dim))
        else:
            attention_factor = yarn_get_mscale(factor)
    beta_fast, beta_slow = rope.beta_fast or 32, rope.beta_slow or 1

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if rope.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoid a zero-width ramp
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, attention_factor


class RotaryEmbedding:
    """cos/sin tables for given positions; one instance per model, shared by all layers."""

    def __init__(self, rope: RopeConfig, device: torch.device | str = "cpu") -> None:
        self.rope = rope
        inv_freq, self.attention_factor = inverse_frequencies(rope)
        self.inv_freq = inv_freq.to(device)

    def cos_sin(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [T] -> cos, sin [T, 1, dim] in `dtype` (rotate-half layout: angles repeated twice).

        The singleton dimension broadcasts over heads, so layers use them as they are.
        """
        inv_freq, attention_factor = self.inv_freq, self.attention_factor
        if self.rope.rope_type == "dynamic":
            # transformers recomputes the base from the longest position in the forward pass.
            longest = int(positions.max()) + 1 if positions.numel() else 0
            if longest > self.rope.max_position_embeddings:
                inv_freq, attention_factor = inverse_frequencies(self.rope, longest)
                inv_freq = inv_freq.to(positions.device)
        freqs = positions[:, None].float() * inv_freq  # [T, dim/2]
        emb = torch.cat((freqs, freqs), dim=-1).unsqueeze(1)  # [T, 1, dim]
        return (emb.cos() * attention_factor).to(dtype), (emb.sin() * attention_factor).to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """x [T, H, dim], cos/sin [T, 1, dim] -> rotated x [T, H, dim].

    The interleaved layout rotates pairs (x0, x1), (x2, x3), ... and returns the
    results de-interleaved (evens then odds), as transformers does for DeepSeek-V3;
    q and k share the layout, so their dot products are those of the original pairs.
    """
    if interleaved:
        half = cos.shape[-1] // 2
        cos, sin = cos[..., :half], sin[..., :half]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    half = x.shape[-1] // 2
    if x.dtype != torch.float32:
        # transformers' rounding order (bfloat16 addcmul rounds once where it rounds three times).
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin
    # x * cos + cat(-x2, x1) * sin, without materializing the rotated copy (float32: 5 passes -> 3,
    # within an ulp of the reference): the rotate-half tables repeat their angles, so both halves
    # use sin[..., :half].
    x1, x2, sin_half = x[..., :half], x[..., half:], sin[..., :half]
    out = x * cos
    out[..., :half].addcmul_(x2, sin_half, value=-1)
    out[..., half:].addcmul_(x1, sin_half)
    return out
