"""Decode attention of the batched path through the native paged kernel (native/csrc/paged_decode.c).

Owns the kernel's per-step arguments: for every decode sequence (a few new tokens: a sampled one
plus forced or draft tokens), its first row in the packed batch, its new and cached token counts
and its block table, built once per forward and reused by every layer. The kernel reads keys and
values in place from the pool and writes each sequence's rows of the output, so there is no
per-layer gather, padding, bucketing or output permutation (the PyTorch path, `decode.py`, needs
all four). Each row's arithmetic depends only on its own sequence.

The batched plan uses it when the kernel builds on this machine, the pool holds float32 or
bfloat16 and the head dims take its vectorized path (`fast`); otherwise it takes `decode.py`. Knows nothing about requests or scheduling.
"""

from __future__ import annotations

import ctypes

import torch

from deepinfer.native import load_library

KV_DTYPES = {torch.float32: 0, torch.bfloat16: 1}


_P, _INT = ctypes.c_void_p, ctypes.c_int
_SIGNATURES = {
    "paged_decode_attention": ([_P] * 6 + [_INT] * 7 + [ctypes.c_float, _INT, _INT], _INT),
    "paged_decode_fast_path": ([_INT, _INT], _INT),
}


def kernel() -> ctypes.CDLL | None:
    return load_library("paged_decode", _SIGNATURES)


def available(kv_dtype: torch.dtype) -> bool:
    """The kernel builds here and reads this KV dtype (any head dims: portable path at worst)."""
    return kv_dtype in KV_DTYPES and kernel() is not None


def fast(kv_dtype: torch.dtype, dk: int, dv: int) -> bool:
    """available, on its vectorized path. Only then do the plans use it: the portable C path (built
    without AVX-512 here) measured 2x slower than the batched PyTorch decode path on SmolLM2's
    decodes, and in the invariant mode 2x faster than `invariant.py` on a 110-token decode step but
    1.8x slower on a 512-token prefill step (30 layers, 2 threads)."""
    return available(kv_dtype) and bool(kernel().paged_decode_fast_path(dk, dv))


class NativeDecode:
    """The sequences one forward pass sends through the kernel (its decodes, or in the invariant
    mode all of them), as the kernel's argument arrays."""

    def __init__(self, members, block_size: int) -> None:
        """members: (SeqSlice, offset of its first new token in the packed batch) pairs."""
        self.block_size = block_size
        rows, tables = [], []
        for s, offset in members:
            used = -(-s.total // block_size)
            if len(s.block_ids) < used or s.num_new < 1:  # C reads every listed block: never past the table
                raise ValueError(f"sequence of {s.total} tokens with {len(s.block_ids)} blocks of {block_size}")
            rows.append((offset, s.num_new, s.num_cached, len(tables)))
            tables.extend(s.block_ids[:used])
        self.seqs = torch.tensor(rows, dtype=torch.int64)          # [S, 4]
        self.tables = torch.tensor(tables, dtype=torch.int64)      # [sum of blocks]
        self.rows_needed = max((o + s.num_new for s, o in members), default=0)
        self.max_block = int(self.tables.max()) if self.tables.numel() else -1
        self.lib = kernel()

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, out: torch.Tensor, *,
               scale: float, window: int | None) -> None:
        """q [T, H, Dk] float32, pools [slots, Hkv, D] -> the decode rows of out [T, H, Dv] float32."""
        heads, dk = q.shape[1], q.shape[2]
        hkv, dv = v_pool.shape[1], v_pool.shape[2]
        if not (q.dtype == out.dtype == torch.float32 and q.is_contiguous() and out.is_contiguous()
                and k_pool.is_contiguous() and v_pool.is_contiguous() and k_pool.dtype == v_pool.dtype):
            raise ValueError("native decode attention needs contiguous float32 q/out and contiguous pools")
        # The C side trusts these bounds (an out-of-range read would crash the process, not raise).
        if (q.shape[0] < self.rows_needed or out.shape[0] < self.rows_needed or out.shape[1] != heads
                or k_pool.shape[:2] != v_pool.shape[:2] or heads % hkv
                or (self.max_block + 1) * self.block_size > k_pool.shape[0]):
            raise ValueError("native decode attention: rows, heads or block ids out of range of the tensors")
        status = self.lib.paged_decode_attention(
            q.data_ptr(), k_pool.data_ptr(), v_pool.data_ptr(), out.data_ptr(), self.seqs.data_ptr(),
            self.tables.data_ptr(), self.seqs.shape[0], heads, hkv, dk, dv, self.block_size, window or 0,
            scale, KV_DTYPES[k_pool.dtype], torch.get_num_threads())
        if status != 0:
            raise MemoryError("native decode attention could not allocate its work buffers")


class NativePlan:
    """Every new token of the forward pass through the kernel: the batch-invariant mode's plan where
    the kernel builds. A row's arithmetic depends only on its own sequence's keys and its position
    (16-key chunks aligned to blocks, per-row online softmax in key order, lanes masked past the
    row's position), not on how many tokens its sequence or the batch computes in this pass: a
    prompt token gives the same bits prefilled at once, in chunks, from the prefix cache or decoded.
    No padding to a fixed key count (`invariant.py`, the PyTorch plan, pads every row's keys to a
    multiple of 512)."""

    def __init__(self, seqs, block_size: int, num_tokens: int) -> None:
        members, offset = [], 0
        for s in seqs:
            if s.num_new:
                members.append((s, offset))
            offset += s.num_new
        self.num_tokens = num_tokens
        self.kernel = NativeDecode(members, block_size)

    def attend(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, *, scale: float,
               window: int | None) -> torch.Tensor:
        """q [T, H, Dk], pools [slots, Hkv, D] (already holding the new tokens) -> [T, H, Dv]."""
        q32 = q.float().contiguous()
        out = q32.new_empty(self.num_tokens, q.shape[1], v_pool.shape[2])
        self.kernel.attend(q32, k_pool, v_pool, out, scale=scale, window=window)
        return out.to(q.dtype)
