"""Batch-invariant linear layers and element-wise ops for the forward pass (a mode; on by default for quantized weights).

CPU BLAS picks different kernels for different row counts, so the same token's
projections can differ in the last bits depending on how many other tokens
share the forward pass (measured here: float32 `F.linear` rows differ between
M=1, M<16 and larger M, and with 2 threads also between M=48 and M=64 for K=1536).
Inside `batch_invariant()` every `F.linear` runs on fixed row tiles of `tile` tokens
(the last one zero-padded), so each token always goes through one kernel shape.

Transcendental element-wise ops (exp, sigmoid, silu, ...) have a vectorized
(SLEEF) body and a scalar tail that differ in the last bit, and which elements
fall in the tail depends on the tensor's size (measured: a DeepSeek router's
sigmoid over [T, 8] differs between T=1 and T=4). Inside the mode they run on a
flat copy padded to a multiple of `_ELEMENTWISE_ALIGN * threads` elements, where
every element takes the vectorized path.

Attention invariance is the paged cache's job (`kvcache/paged.py`).
"""

from __future__ import annotations

import contextlib
import threading

import torch
import torch.nn.functional as F

# 16 rows: the smallest tile whose rows MKL computes alike at every position here (float32, 1-2
# threads, the model's shapes), and the cheapest measured overall (SmolLM2, 2 threads, invariant mode:
# single-stream ~13.5 / 17.2 / 19.4 tok/s and a 32-request extraction batch 21.0 / 20.3 / 23.2 s
# with tiles of 32 / 16 / 8 rows).
DEFAULT_TILE = 16
_ELEMENTWISE_ALIGN = 256  # elements: a multiple of every CPU vector loop's step (2 x 512-bit of bf16 = 64)
_UNARY = [(owner, name) for name in ("exp", "sigmoid", "tanh", "log", "erf", "sin", "cos")
          for owner in (torch, torch.Tensor)] + [(F, "silu"), (F, "gelu"), (F, "softplus")]


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
    """F.linear(x, weight, bias) as x_tile @ weight^T over fixed row tiles of `tile` tokens. x: [..., K].

    Every GEMM call has the one shape [tile, K] x [K, N] (the last tile zero-padded), so a token's
    reduction order cannot depend on how many tokens share the batch. Measured here (MKL float32,
    oneDNN bfloat16, 1-2 threads): a row's result does not depend on its position inside the tile,
    and tiles of 32 rows cost about what one full GEMM costs for 32 to 1024 tokens (1.0-1.4x);
    a single token pays for a whole tile (`DEFAULT_TILE` rows).
    """
    lead, k = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, k)
    m = rows.shape[0]
    padded = -(-m // tile) * tile
    if padded != m:
        rows = torch.cat([rows, rows.new_zeros(padded - m, k)])
    out = rows.new_empty(padded, weight.shape[0])
    weight_t = weight.t()
    for i in range(0, padded, tile):
        torch.mm(rows[i:i + tile], weight_t, out=out[i:i + tile])
    out = out[:m]
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])


def _patches(tile: int) -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for every function the mode reroutes."""
    def invariant_linear(x, weight, bias=None):
        return tiled_linear(x, weight, bias, tile)

    patches = [(F, "linear", invariant_linear)]
    for owner, name in _UNARY:
        original = getattr(owner, name)
        patches.append((owner, name, _aligned(original)))
    return patches


def _aligned(original):
    def call(x, *args, **kwargs):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or kwargs.get("inplace") or "out" in kwargs:
            return original(x, *args, **kwargs)
        return aligned_unary(original, x, *args, **kwargs)
    return call


_lock = threading.RLock()


@contextlib.contextmanager
def batch_invariant(enabled: bool = True, tile: int = DEFAULT_TILE):
    """Run the enclosed forward passes with batch-invariant linear and element-wise ops.

    The functions are swapped on the torch modules for the duration (cheaper than a
    TorchFunctionMode, which would route every op of the forward through Python), so
    torch work on other threads meanwhile sees them too; results stay the same, only slower.
    """
    if not enabled:
        yield
        return
    with _lock:
        patches = _patches(tile)
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        try:
            for owner, name, replacement in patches:
                setattr(owner, name, replacement)
            yield
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)
