"""y = x W^T for a `QuantWeight`: the native kernel (native/csrc/quant_matmul.c) or its PyTorch twin.

Activations are quantized on the fly to 8 bits per block of 32 values, as llama.cpp does
(s = max|x| / 127, a = round(x * 127 / max|x|)); the products with the weights' integers are then
exact, and each output is a sum over blocks in a fixed order, so a row's result never depends on
the other rows of the batch (the kernel is batch-invariant by construction, for every M).
The error against float64 dequantize-then-matmul is that of the activations' rounding: at most
sum over blocks of s_b / 2 * sum |w| over the block, plus float32 rounding of the block sums.

`quant_linear_twin` computes the same quantized activations in PyTorch and multiplies their
dequantized values by the dequantized weight: the kernel's arithmetic up to float32 summation
order. It runs where the kernel cannot be built.
"""

from __future__ import annotations

import ctypes

import torch
import torch.nn.functional as F

from deepinfer.model.quant.packed import CHUNK, QuantWeight
from deepinfer.native import load_library

_P, _I64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
_SIGNATURES = {"quant_matmul": ([_P, _P, _P, _INT, _INT, _INT, _I64, _I64, _P, _I64, _I64, _P, _INT], None)}


def _kernel():
    return load_library("quant_matmul", _SIGNATURES)


_functions: list = []


def _function():
    """The kernel's entry point, looked up once (None where the twin runs)."""
    if not _functions:
        lib = _kernel()
        _functions.append(None if lib is None else lib.quant_matmul)
    return _functions[0]


def native_available() -> bool:
    return _function() is not None


def quantize_activations(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [M, K] float32 -> (a int8 values as float32 [M, K], s [M, K / 32]), as the kernel rounds."""
    blocks = x.reshape(x.shape[0], -1, CHUNK)
    amax = blocks.abs().amax(-1)
    inv = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    a = torch.round(blocks * inv[..., None])
    return a.reshape(x.shape), amax / 127.0


def quant_linear_twin(x: torch.Tensor, weight: QuantWeight) -> torch.Tensor:
    """The kernel's result in PyTorch (x [M, K] float32 -> [M, N] float32)."""
    a, s = quantize_activations(x)
    x_q = (a.view(x.shape[0], -1, CHUNK) * s[..., None]).view(x.shape)
    return F.linear(x_q, weight.dequantize())


def quant_linear(x: torch.Tensor, weight: QuantWeight) -> torch.Tensor:
    """x [..., K] -> [..., N] float32 (x is computed on in float32)."""
    lead = x.shape[:-1]
    rows = x.reshape(-1, x.shape[-1])
    if rows.dtype != torch.float32:
        rows = rows.float()
    if rows.shape[-1] != weight.cols:
        raise ValueError(f"input of {rows.shape[-1]} features for a weight of {weight.cols} columns")
    function = _function()
    if function is None or rows.device.type != "cpu" or rows.requires_grad:
        return quant_linear_twin(rows, weight).view(*lead, weight.rows)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty(rows.shape[0], weight.rows, dtype=torch.float32)
    # (a decode step makes ~120 of these calls: the weight's arguments are computed once)
    function(*weight.kernel_arguments, rows.data_ptr(), rows.stride(0), rows.shape[0], out.data_ptr(),
             torch.get_num_threads())
    return out.view(*lead, weight.rows)


def quant_linear_parts(x: torch.Tensor, weights: list[QuantWeight], bias: torch.Tensor | None) -> torch.Tensor:
    """x [..., K] times fused quantized weights (outputs side by side), plus bias; in x's dtype."""
    outs = [quant_linear(x, w) for w in weights]
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=-1)
    if bias is not None:
        out += bias
    return out if out.dtype == x.dtype else out.to(x.dtype)
