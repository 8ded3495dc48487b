"""Rotary position embeddings: frequencies for each scaling variant, and their application.

Owns the math of default, linear, dynamic-NTK, llama3 and yarn rotary embeddings,
bit-compatible with transformers 5.x, and the two layouts (rotate-half, and
DeepSeek's interleaved pairs). Angles come from explicit per-token positions,
never from an arange, so tokens of several sequences can share one forward pass.
"""

from __future__ import annotations

import math

import torch

from deepinfer.model.config import RopeConfig, yarn_get_mscale


def inverse_frequencies(rope: RopeConfig, seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """Returns (inv_freq [dim // 2] float32, attention_factor scaling cos and sin)."""
    dim, base = rope.dim, rope.theta
    exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    if rope.rope_type == "dynamic":
        # NTK-aware base stretch, only once the sequence outgrows the trained length.
        seq_len = max(seq_len or 0, rope.max_position_embeddings)
        base = base * ((rope.factor * seq_len / rope.max_position_embeddings) - (rope.factor - 1)) ** (dim / (dim - 2))
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
            attention_factor = float(yarn_get_mscale(factor, rope.mscale) / yarn_get_mscale(factor, rope.mscale_all_dim))
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
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin
