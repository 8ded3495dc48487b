"""GGUF block formats as unsigned integers, per-block scales and mins: one form for every kernel.

Every supported format reads as value = scale * (u - offset) + min, with u an unsigned integer of
`bits` bits, one scale (and min, for the asymmetric formats) per `block` consecutive values of a
row, and `offset` a constant of the format (0 where it has mins):

    Q4_0  u = 4-bit,  scale = d (fp16),           offset 8,   block 32
    Q4_1  u = 4-bit,  scale = d, min = m (fp16),  offset 0,   block 32
    Q8_0  u = q + 128 (q int8), scale = d,        offset 128, block 32
    Q4_K  u = 4-bit,  scale = d * sc, min = -dmin * m (6-bit sc, m), per 32 of a 256 super-block
    Q5_K  u = 5-bit,  as Q4_K with one more bit per value
    Q6_K  u = 6-bit,  scale = d * sc (int8 sc), offset 32, block 16

Scales and mins are float32: the products of an fp16 and a 6- or 8-bit integer are exact there, so
`Unpacked` holds exactly the values llama.cpp dequantizes to. Layouts follow ggml-quants.c
(block_q4_0 ... block_q6_K). `quantize_symmetric8` / `quantize_asymmetric4` make the same form
from float weights (quantize on load). Knows nothing about kernels or memory layouts for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockFormat:
    """A GGUF quantization type as this package reads it."""

    name: str
    values_per_block: int     # GGUF block (32, or 256 for the K-quants)
    bytes_per_block: int
    bits: int                 # of the unsigned values u
    block: int                # values per scale (and min)
    offset: int               # subtracted from u where the format has no mins


FORMATS: dict[str, BlockFormat] = {f.name: f for f in (
    BlockFormat("Q4_0", 32, 18, 4, 32, 8),
    BlockFormat("Q4_1", 32, 20, 4, 32, 0),
    BlockFormat("Q8_0", 32, 34, 8, 32, 128),
    BlockFormat("Q4_K", 256, 144, 4, 32, 0),
    BlockFormat("Q5_K", 256, 176, 5, 32, 0),
    BlockFormat("Q6_K", 256, 210, 6, 16, 32),
)}


@dataclass
class Unpacked:
    """A [rows, cols] weight as value = scales * (values - offset) + mins, blockwise along cols."""

    values: np.ndarray            # uint8 [rows, cols], each < 2**bits
    scales: np.ndarray            # float32 [rows, cols // block]
    mins: np.ndarray | None       # float32 [rows, cols // block], or None (symmetric formats)
    bits: int
    block: int
    offset: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    def dequantize(self) -> np.ndarray:
        """float32 [rows, cols], as llama.cpp's dequantize_row_* computes them."""
        rows, cols = self.values.shape
        u = self.values.reshape(rows, cols // self.block, self.block).astype(np.float32)
        out = self.scales[..., None] * (u - np.float32(self.offset))
        if self.mins is not None:
            out = out + self.mins[..., None]
        return out.reshape(rows, cols)

    def take_rows(self, index: np.ndarray) -> "Unpacked":
        """The rows `index` (a permutation or a subset), in that order."""
        return Unpacked(self.values[index], self.scales[index], None if self.mins is None else self.mins[index],
                        self.bits, self.block, self.offset)


def concat_rows(parts: list[Unpacked]) -> Unpacked:
    """Weights of one format stacked along the rows (fused q/k/v or gate/up projections)."""
    first = parts[0]
    if any((p.bits, p.block, p.offset, p.mins is None) != (first.bits, first.block, first.offset, first.mins is None)
           for p in parts):
        raise ValueError("fused weights must share one quantization format")
    mins = None if first.mins is None else np.concatenate([p.mins for p in parts])
    return Unpacked(np.concatenate([p.values for p in parts]), np.concatenate([p.scales for p in parts]), mins,
                    first.bits, first.block, first.offset)


def _f16(raw: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(raw).view(np.float16).astype(np.float32)


def _nibbles(qs: np.ndarray, group: int) -> np.ndarray:
    """[n, bytes] -> [n, 2 * bytes] values: per `group` bytes, their low nibbles then their high ones
    (group 16 for Q4_0/Q4_1's 32 values, 32 for the K-quants' 64-value chunks)."""
    groups = qs.reshape(qs.shape[0], -1, 1, group) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    return (groups & np.uint8(0x0F)).reshape(qs.shape[0], -1)


def _k_scales(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's 12 bytes -> 8 six-bit scales and 8 six-bit mins (ggml's get_scale_min_k4)."""
    d, m, md = (packed.reshape(-1, 3, 4)[:, i] for i in range(3))
    sc = np.concatenate([d & 0x3F, (md & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([m & 0x3F, (md >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return sc.astype(np.float32), mn.astype(np.float32)


def _decode(fmt: BlockFormat, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """[n, bytes_per_block] -> (u [n, values_per_block], scales [n, v/block], mins or None)."""
    n = blocks.shape[0]
    if fmt.name == "Q4_0":
        return _nibbles(blocks[:, 2:], 16), _f16(blocks[:, :2]), None
    if fmt.name == "Q4_1":
        return _nibbles(blocks[:, 4:], 16), _f16(blocks[:, :2]), _f16(blocks[:, 2:4])
    if fmt.name == "Q8_0":
        return (blocks[:, 2:] ^ np.uint8(0x80)), _f16(blocks[:, :2]), None   # q + 128 for int8 q
    if fmt.name in ("Q4_K", "Q5_K"):
        d, dmin = _f16(blocks[:, 0:2]), _f16(blocks[:, 2:4])
        sc, m = _k_scales(blocks[:, 4:16])
        qs = blocks[:, 16:144] if fmt.name == "Q4_K" else blocks[:, 48:176]
        u = _nibbles(qs, 32)
        if fmt.name == "Q5_K":
            high = blocks[:, 16:48].reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)
            u = u | ((high & np.uint8(1)) << np.uint8(4)).reshape(n, 256)
        return u, d * sc, -(dmin * m)
    if fmt.name == "Q6_K":
        ql, qh = blocks[:, :128], blocks[:, 128:192]
        sc, d = blocks[:, 192:208].view(np.int8).astype(np.float32), _f16(blocks[:, 208:210])
        low = (ql.reshape(n, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & np.uint8(0x0F)
        high = (qh.reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & np.uint8(3)
        return low.reshape(n, 256) | (high.reshape(n, 256) << np.uint8(4)), d * sc, None
    raise ValueError(f"no decoder for {fmt.name}")


def unpack_rows(fmt: BlockFormat, data: np.ndarray, rows: int, cols: int) -> Unpacked:
    """A GGUF tensor's bytes (rows x row_bytes, ggml's row-major blocks) -> Unpacked [rows, cols]."""
    blocks = np.ascontiguousarray(data, dtype=np.uint8).reshape(rows * (cols // fmt.values_per_block),
                                                                 fmt.bytes_per_block)
    u, scales, mins = _decode(fmt, blocks)
    per_row = cols // fmt.block
    return Unpacked(np.ascontiguousarray(u.reshape(rows, cols)),
                    np.ascontiguousarray(scales.reshape(rows, per_row), dtype=np.float32),
                    None if mins is None else np.ascontiguousarray(mins.reshape(rows, per_row), dtype=np.float32),
                    fmt.bits, fmt.block, fmt.offset)


def quantize_symmetric8(weight: np.ndarray, block: int = 32) -> Unpacked:
    """float [rows, cols] -> 8-bit symmetric blocks (Q8_0's scheme with float32 scales)."""
    rows, cols = weight.shape
    w = weight.astype(np.float32).reshape(rows, cols // block, block)
    amax = np.abs(w).max(-1)
    scale = (amax / np.float32(127)).astype(np.float32)
    inv = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale > 0)
    q = np.clip(np.rint(w * inv[..., None]), -127, 127).astype(np.int16) + 128
    return Unpacked(q.astype(np.uint8).reshape(rows, cols), scale, None, 8, block, 128)


def quantize_asymmetric4(weight: np.ndarray, block: int = 32) -> Unpacked:
    """float [rows, cols] -> 4-bit blocks with a min (Q4_1's scheme with float32 scale and min)."""
    rows, cols = weight.shape
    w = weight.astype(np.float32).reshape(rows, cols // block, block)
    lo, hi = w.min(-1), w.max(-1)
    scale = ((hi - lo) / np.float32(15)).astype(np.float32)
    inv = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale > 0)
    q = np.clip(np.rint((w - lo[..., None]) * inv[..., None]), 0, 15)
    return Unpacked(q.astype(np.uint8).reshape(rows, cols), scale, lo.astype(np.float32), 4, block, 0)
