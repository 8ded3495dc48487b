"""Weight sources that hand out quantized weights: a GGUF's blocks as they are, or float ones quantized on load.

`QuantizedSource` wraps any `TensorSource`. `take_quantized(name, shape)` returns an `Unpacked`
weight for the layers that multiply quantized (model/layers.py: projections, embeddings):

    "gguf"  the GGUF tensors kept in their block format; float tensors stay float
    "int8"  also float 2-D tensors quantized on load, 8-bit symmetric per 32 values (Q8_0's scheme)
    "int4"  also float 2-D tensors quantized on load, 4-bit with a min per 32 values (Q4_1's scheme)

and None for a tensor that stays float (a norm, a matrix whose rows are not a multiple of 32
values). `take` of a quantized tensor gives its dequantized float values, so the modules that do
not multiply quantized still load. Every tensor is counted once, whichever way it was taken.
"""

from __future__ import annotations

import numpy as np
import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model.quant.formats import FORMATS, Unpacked, quantize_asymmetric4, quantize_symmetric8, unpack_rows
from deepinfer.model.quant.packed import CHUNK
from deepinfer.model.weights import TensorSource

QUANTIZATIONS = ("gguf", "int8", "int4")
_QUANTIZE = {"int8": quantize_symmetric8, "int4": quantize_asymmetric4}


def unpack_gguf_tensor(tensor, source: str) -> Unpacked:
    """A gguf.ReaderTensor of a supported block format -> Unpacked [rows, row length]."""
    fmt = FORMATS.get(tensor.tensor_type.name)
    if fmt is None:
        raise ModelLoadError(f"GGUF file {source}: tensor '{tensor.name}' is {tensor.tensor_type.name}, which "
                             f"deepinfer does not run quantized (it runs {', '.join(FORMATS)}).")
    dims = [int(n) for n in tensor.shape.tolist()]   # ggml order: row length first
    cols, rows = dims[0], int(np.prod(dims[1:], dtype=np.int64)) if len(dims) > 1 else 1
    if tensor.data.size != rows * cols // fmt.values_per_block * fmt.bytes_per_block:
        raise ModelLoadError(f"GGUF file {source}: tensor '{tensor.name}' holds {tensor.data.size} bytes, not "
                             f"the {rows * cols // fmt.values_per_block * fmt.bytes_per_block} its shape needs.")
    return unpack_rows(fmt, tensor.data, rows, cols)


class QuantizedSource(TensorSource):
    """`inner`'s tensors, plus `quantized` ones (already in block form), quantized per `mode`."""

    def __init__(self, inner: TensorSource, quantized: dict[str, Unpacked], mode: str) -> None:
        if mode not in QUANTIZATIONS:
            raise ValueError(f"quantization {mode!r}; expected one of {QUANTIZATIONS}")
        locations = {**inner.locations, **{name: inner.where for name in quantized}}
        super().__init__(locations, inner.dtype, inner.device, inner.where)
        self.inner, self.quantized, self.mode = inner, quantized, mode

    def take(self, name: str, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        if name in self.quantized:
            weight = self._take_block_form(name, shape)
            return torch.from_numpy(weight.dequantize()).to(device=self.device, dtype=dtype or self.dtype)
        tensor = self.inner.take(name, shape, dtype)
        self.taken.add(name)
        return tensor

    def take_quantized(self, name: str, shape: tuple[int, ...]) -> Unpacked | None:
        if name in self.quantized:
            return self._take_block_form(name, shape)
        if self.mode in _QUANTIZE and self.inner.has(name) and len(shape) == 2 and shape[1] % CHUNK == 0:
            return _QUANTIZE[self.mode](self.take(name, shape, torch.float32).numpy())
        return None

    def _take_block_form(self, name: str, shape: tuple[int, ...]) -> Unpacked:
        weight = self.quantized[name]
        if tuple(weight.shape) != tuple(shape):
            raise ModelLoadError(f"{self.where}: tensor '{name}' has shape {list(weight.shape)}, expected "
                                 f"{list(shape)} from the config. The weights do not match the config.")
        self.taken.add(name)
        return weight

    def close(self) -> None:
        self.inner.close()
