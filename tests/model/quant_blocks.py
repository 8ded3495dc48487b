"""Random, valid GGUF blocks of every format deepinfer runs quantized, for the quantized-kernel tests.

Quantized values and sub-block scales are uniformly random bytes (every bit pattern a file can
hold); the fp16 super-scales are set to finite values of either sign, so no block decodes to inf
or NaN. The reference dequantization is gguf-py's (an implementation independent of ours).
"""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from deepinfer.model.quant import FORMATS, BlockFormat

# Byte offsets of each format's fp16 fields (ggml-quants.h block layouts).
_F16_FIELDS = {"Q4_0": (0,), "Q4_1": (0, 2), "Q8_0": (0,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def random_blocks(fmt: BlockFormat, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 [rows, cols / values_per_block * bytes_per_block]: a tensor's bytes in `fmt`."""
    count = rows * cols // fmt.values_per_block
    blocks = rng.integers(0, 256, (count, fmt.bytes_per_block), dtype=np.uint8)
    for start in _F16_FIELDS[fmt.name]:
        scale = rng.uniform(0.5, 2.0, count) * rng.choice([-1.0, 1.0], count) * 2.0 ** -7
        blocks[:, start:start + 2] = scale.astype(np.float16).view(np.uint8).reshape(count, 2)
    return blocks.reshape(rows, -1)


def reference_dequantize(fmt: BlockFormat, data: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """float64 [rows, cols] by gguf-py."""
    values = dequantize(data, GGMLQuantizationType[fmt.name])
    return np.asarray(values, dtype=np.float64).reshape(rows, cols)


ALL_FORMATS = sorted(FORMATS)
