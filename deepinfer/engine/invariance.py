"""Batch-invariant matmuls for the model's linear layers (a mode, on by default).

CPU BLAS picks different kernels for different row counts, so the same token's
projections can differ in the last bits depending on how many other tokens
share the forward pass (measured here: float32 `F.linear` rows differ between
M=1, M<16 and larger M). Inside `batch_invariant()` every `F.linear` and every
`x @ W` with a 2-D right operand runs on fixed tiles of `tile` rows (the last
one zero-padded), so each row always goes through one kernel shape. Transcendental element-wise ops (exp, sigmoid, silu, ...) have
a vectorized (SLEEF) body and a scalar tail that differ in the last bit, and which
elements fall in the tail depends on the tensor's size (measured: a DeepSeek
router's sigmoid over [T, 8] differs between T=1 and T=4), so inside the mode they
run on a flattened copy padded to a multiple of `_ELEMENTWISE_ALIGN * threads`
elements, where every element takes the vectorized path. Attention invariance is
the paged cache's job (`kvcache/paged.py`).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

DEFAULT_TILE = 16
_ELEMENTWISE_ALIGN = 256  # elements: a multiple of every CPU vector loop's step (2 x 512-bit of bf16 = 64)
_UNARY = {torch.exp, torch.Tensor.exp, torch.sigmoid, torch.Tensor.sigmoid, torch.tanh, torch.Tensor.tanh,
          torch.log, torch.Tensor.log, torch.erf, torch.Tensor.erf, torch.sin, torch.Tensor.sin, torch.cos,
          torch.Tensor.cos, F.silu, F.gelu, F.softplus, torch.special.expit}


def aligned_unary(func, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """func(x) computed on a padded flat copy, so that no element lands in a scalar tail loop."""
    align = _ELEMENTWISE_ALIGN * max(1, torch.get_num_threads())
    n = x.numel()
    if n % align == 0 and x.is_contiguous():
        return func(x, *args, **kwargs)
    flat = torch.cat([x.reshape(-1), x.new_zeros((-n) % align)])
    return func(flat, *args, **kwargs)[:n].view(x.shape)


def tiled_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 tile: int) -> torch.Tensor:
    """F.linear(x, weight, bias) computed on fixed [tile, K] row blocks. x: [..., K]."""
    lead, k = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, k)
    m = rows.shape[0]
    padded = -(-m // tile) * tile
    if padded != m:
        rows = torch.cat([rows, rows.new_zeros(padded - m, k)])
    out = torch.cat([F.linear(rows[i:i + tile], weight, bias) for i in range(0, padded, tile)])
    return out[:m].reshape(*lead, weight.shape[0])


class _InvariantMode(TorchFunctionMode):
    def __init__(self, tile: int) -> None:
        super().__init__()
        self.tile = tile

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear:
            x, weight = args[0], args[1]
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            return tiled_linear(x, weight, bias, self.tile)
        if func in _UNARY and isinstance(args[0], torch.Tensor) and args[0].is_floating_point() \
                and not kwargs.get("inplace") and "out" not in kwargs:
            return aligned_unary(func, *args, **kwargs)
        if func in (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__) and not kwargs:
            x, w = args
            if isinstance(w, torch.Tensor) and w.dim() == 2 and x.dim() >= 2:
                return tiled_linear(x, w.t(), None, self.tile)
        return func(*args, **kwargs)


@contextlib.contextmanager
def batch_invariant(enabled: bool = True, tile: int = DEFAULT_TILE):
    """Run the enclosed forward passes with batch-invariant linear layers."""
    if not enabled:
        yield
        return
    with _InvariantMode(tile):
        yield
