"""`QuantWeight`: a [rows, cols] weight kept block-quantized, in the layout the native kernel reads.

Rows go in panels of 16 (the last zero-padded); for each panel and each chunk of 32 columns the
values are stored as 64-byte vectors, byte 4 * lane + t holding value 4 * g + t of the chunk
for the panel's row `lane` (group g = 0..7): one vector lane per output row, so a kernel
multiplies 16 rows at once and never sums across lanes. 4-bit values pair groups 2j and 2j + 1
in the low and high nibbles of one vector; 5- and 6-bit values add one bit plane each (bit g of a
byte = bit 4 (5) of group g's value); 8-bit values take one vector per group. Scales and mins are
float32 [panel][cols / block][16]. See native/csrc/quant_matmul.c for the arithmetic.

Memory per 32 values of a row: bits * 4 bytes of values plus 4 bytes per scale (and min):
1.11x a Q4_0 file's bytes, 1.2x Q4_1, 1.06x Q8_0, 1.33x Q4_K, 1.27x Q5_K, 1.22x Q6_K.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from deepinfer.model.quant.formats import Unpacked, concat_rows

LANES = 16
CHUNK = 32


def panel_rows(rows: int) -> int:
    return -(-rows // LANES) * LANES


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    if a.shape[0] == rows:
        return a
    return np.concatenate([a, np.zeros((rows - a.shape[0], *a.shape[1:]), dtype=a.dtype)])


def _pack_values(values: np.ndarray, bits: int) -> np.ndarray:
    """uint8 [padded rows, cols] -> [panels, chunks, 64 * bits] bytes (the layout above)."""
    rows, cols = values.shape
    v = values.reshape(rows // LANES, LANES, cols // CHUNK, 8, 4).transpose(0, 2, 3, 1, 4)  # [P, C, g, lane, t]
    v = v.reshape(rows // LANES, cols // CHUNK, 8, 64)
    if bits == 8:
        return np.ascontiguousarray(v.reshape(rows // LANES, cols // CHUNK, 512))
    low = v & np.uint8(15)
    parts = [low[:, :, 0::2] | (low[:, :, 1::2] << np.uint8(4))]                       # [P, C, 4, 64]
    weights = (np.uint8(1) << np.arange(8, dtype=np.uint8)).reshape(1, 1, 8, 1)
    for plane in range(bits - 4):
        bit = (v >> np.uint8(4 + plane)) & np.uint8(1)
        parts.append((bit * weights).sum(axis=2, dtype=np.uint8)[:, :, None])          # [P, C, 1, 64]
    return np.ascontiguousarray(np.concatenate(parts, axis=2).reshape(rows // LANES, cols // CHUNK, 64 * bits))


def _pack_blocks(a: np.ndarray) -> np.ndarray:
    """float32 [padded rows, blocks] -> [panels, blocks, 16]."""
    rows, blocks = a.shape
    return np.ascontiguousarray(a.reshape(rows // LANES, LANES, blocks).transpose(0, 2, 1), dtype=np.float32)


@dataclass(eq=False)
class QuantWeight:
    """A block-quantized [rows, cols] weight (see the module docstring for the layout)."""

    rows: int
    cols: int
    bits: int
    block: int
    offset: int
    data: torch.Tensor               # uint8 [panels, cols / 32, 64 * bits]
    scales: torch.Tensor             # float32 [panels, cols / block, 16]
    mins: torch.Tensor | None        # float32 [panels, cols / block, 16] or None (symmetric)

    @classmethod
    def pack(cls, u: Unpacked) -> "QuantWeight":
        rows, cols = u.shape
        if cols % CHUNK:
            raise ValueError(f"a quantized weight needs a multiple of {CHUNK} columns, not {cols}")
        padded = panel_rows(rows)
        data = _pack_values(_pad_rows(u.values, padded), u.bits)
        scales = _pack_blocks(_pad_rows(u.scales, padded))
        mins = None if u.mins is None else torch.from_numpy(_pack_blocks(_pad_rows(u.mins, padded)))
        return cls(rows, cols, u.bits, u.block, u.offset, torch.from_numpy(data), torch.from_numpy(scales), mins)

    def __post_init__(self) -> None:
        # quant_matmul's leading arguments (the tensors are owned here, so the pointers stay valid)
        mins = self.mins.data_ptr() if self.mins is not None else None
        self.kernel_arguments = (self.data.data_ptr(), self.scales.data_ptr(), mins, self.bits, self.block,
                                 self.offset, self.rows, self.cols)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.data, self.scales, self.mins) if t is not None)

    def unpacked_rows(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(u int32 [len, cols], scales [len, cols / block], mins or None) of the rows `index`."""
        panel, lane = index // LANES, index % LANES
        chunks = self.cols // CHUNK
        raw = self.data.index_select(0, panel).view(-1, chunks, self.bits, 64)                # [T, C, vec, 64]
        raw = raw.view(-1, chunks, self.bits, LANES, 4)[torch.arange(len(index)), :, :, lane]  # [T, C, vec, 4]
        raw = raw.to(torch.int32)
        if self.bits == 8:
            u = raw
        else:
            u = torch.stack([raw[:, :, :4] & 15, raw[:, :, :4] >> 4], dim=3).flatten(2, 3)  # [T, C, 8, 4]
            for plane in range(self.bits - 4):
                bits = (raw[:, :, 4 + plane, None, :] >> torch.arange(8).view(1, 1, 8, 1)) & 1
                u = u | (bits << (4 + plane))
        u = u.reshape(len(index), self.cols)

        def blocks(t: torch.Tensor) -> torch.Tensor:
            return t.index_select(0, panel)[torch.arange(len(index)), :, lane]
        return u, blocks(self.scales), None if self.mins is None else blocks(self.mins)

    def dequantize_rows(self, index: torch.Tensor) -> torch.Tensor:
        """float32 [len(index), cols]: the weight's rows `index` (an embedding lookup)."""
        u, scales, mins = self.unpacked_rows(index)
        groups = u.view(len(index), -1, self.block).to(torch.float32)
        out = scales[..., None] * (groups - float(self.offset))
        if mins is not None:
            out = out + mins[..., None]
        return out.view(len(index), self.cols)

    def dequantize(self) -> torch.Tensor:
        """float32 [rows, cols]."""
        return self.dequantize_rows(torch.arange(self.rows))


def _format(u: Unpacked) -> tuple:
    return (u.bits, u.block, u.offset, u.mins is None)


def pack_fused(parts: list[Unpacked]) -> list[QuantWeight]:
    """Weights fused along the rows (q/k/v, gate/up): one QuantWeight per run of parts that share a
    format (a Q4_K_M file keeps v in Q6_K beside q and k in Q4_K), outputs concatenated in order."""
    runs: list[list[Unpacked]] = []
    for part in parts:
        if runs and _format(runs[-1][-1]) == _format(part):
            runs[-1].append(part)
        else:
            runs.append([part])
    return [QuantWeight.pack(run[0] if len(run) == 1 else concat_rows(run)) for run in runs]
