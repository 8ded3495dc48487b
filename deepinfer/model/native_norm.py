"""Float32 RMSNorm and SwiGLU gating through native kernels (native/csrc/rms_norm.c, swiglu.c).

PyTorch's fused CPU RMSNorm costs 20-30 us on the engine's [40-160, 576] activations at 2 threads
and 130-800 us on 512-row prefill chunks, against 6-27 us for the one-pass kernel (the model calls
it twice per layer); the SwiGLU gate silu(gate) * up in one pass instead of two (PyTorch's silu
alone: ~0.9 ms on a 512-row prefill chunk's [512, 1536], 5% of a prefill step; and no padded copies
in the batch-invariant mode: every element takes the same instructions wherever it lies).
`rms_norm_f32` and `swiglu_f32` return None when the kernel is unavailable (or autograd is
on), and the caller takes PyTorch's path. Where the kernel is available it takes every float32
input, strided rows included (a split view of a projection is contiguous when it has one row and
strided otherwise): mixing the two implementations by layout would round the same row differently
alone and in a batch, breaking batch invariance. Knows nothing about the model around it.
"""

from __future__ import annotations

import ctypes

import torch

from deepinfer.native import load_library


def _kernel():
    lib = load_library("rms_norm")
    if lib is not None and not getattr(lib, "_deepinfer_typed", False):
        p = ctypes.c_void_p
        lib.rms_norm_f32.argtypes = [p, ctypes.c_int64, p, p, ctypes.c_int64, ctypes.c_int, ctypes.c_float,
                                     ctypes.c_int]
        lib.rms_norm_f32.restype = None
        lib._deepinfer_typed = True
    return lib


def _swiglu_kernel():
    lib = load_library("swiglu")
    if lib is not None and not getattr(lib, "_deepinfer_typed", False):
        p = ctypes.c_void_p
        lib.swiglu_f32.argtypes = [p, p, ctypes.c_int64, p, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        lib.swiglu_f32.restype = None
        lib._deepinfer_typed = True
    return lib


def swiglu_f32(gate_up: torch.Tensor, width: int) -> torch.Tensor | None:
    """gate_up [T, 2 * width] float32 (gate columns first) -> silu(gate) * up [T, width], or None."""
    if gate_up.device.type != "cpu" or gate_up.requires_grad or gate_up.dim() != 2 or gate_up.stride(1) != 1:
        return None
    if gate_up.shape[1] != 2 * width:  # the kernel reads 2 * width floats a row
        raise ValueError(f"gate/up rows of {gate_up.shape[1]} values for a width of {width}")
    lib = _swiglu_kernel()
    if lib is None:
        return None
    out = torch.empty(gate_up.shape[0], width, dtype=torch.float32)
    base = gate_up.data_ptr()
    lib.swiglu_f32(base, base + 4 * width, gate_up.stride(0), out.data_ptr(), gate_up.shape[0], width,
                   torch.get_num_threads())
    return out


def rms_norm_f32(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor | None:
    """x [..., D] float32, weight [D] float32 -> normalized [..., D] (contiguous), or None."""
    if x.device.type != "cpu" or x.requires_grad or weight.requires_grad:
        return None
    lib = _kernel()
    if lib is None:
        return None
    dim = weight.shape[0]
    if weight.dim() != 1 or x.shape[-1] != dim:  # the kernel reads dim floats a row
        raise ValueError(f"RMSNorm weight of shape {tuple(weight.shape)} for rows of {x.shape[-1]} values")
    if not (x.dim() == 2 and x.stride(1) == 1):
        x = x.contiguous()                                   # rows of a 2-D view are read in place
    row_stride = x.stride(0) if x.dim() == 2 else dim
    weight = weight.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype)
    lib.rms_norm_f32(x.data_ptr(), row_stride, weight.data_ptr(), out.data_ptr(), x.numel() // dim, dim, eps,
                     torch.get_num_threads())
    return out
