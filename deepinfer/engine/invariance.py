"""Batch-invariant matmuls for the model's linear layers (a mode, on by default).

CPU BLAS picks different kernels for different row counts, so the same token's
projections can differ in the last bits depending on how many other tokens
share the forward pass (measured here: float32 `F.linear` rows differ between
M=1, M<16 and larger M). Inside `batch_invariant()` every `F.linear` and every
`x @ W` with a 2-D right operand runs on fixed tiles of `tile` rows (the last
one zero-padded), so each row always goes through one kernel shape. Attention
invariance is the paged cache's job (`kvcache/paged.py`).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

DEFAULT_TILE = 16


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
