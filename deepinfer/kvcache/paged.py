"""The paged KV pool and the per-forward `PagedKVCache` view the model attends through.

`KVPool` holds, per layer, k [num_slots, num_kv_heads, dk] and v [num_slots,
num_kv_heads, dv] with num_slots = num_blocks * block_size (k and v head dims
may differ: MLA). A `PagedKVCache` describes one forward pass over a packed
batch of sequences (block table, tokens already cached, new tokens each) and
implements the model's `KVCache` protocol: it writes the new keys/values into
their slots first, then attends each new token over its own sequence's paged KV.

The attention arithmetic lives in plans. Where the native kernel builds on its vectorized path,
every row of every pass goes through it (`native_decode.NativePlan`, whose per-row arithmetic never
depends on the batch), in either mode: measured against the fused path below (SmolLM2, 2 threads,
16 extraction prompts of ~250 tokens) it prefilled in 1.63 s against 1.96 s in float32 and 2.04 s
against 2.47 s in bfloat16, and two 1,132-token prompts in 3.52 s against 3.64 s; and it makes
attention rows independent of how a step is batched and chunked, so that speculative decoding's
verify rows (and a prompt chunked differently) give the plain path's values wherever the linear
layers are row-invariant too (quantized weights; float ones in the batch-invariant mode).
Elsewhere: `batched.py` (one fused call per group of sequences) by default, and `invariant.py`
(one fixed PyTorch kernel shape per query row) for the batch-invariant mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from deepinfer.kvcache.batched import BatchedPlan
from deepinfer.kvcache.invariant import InvariantPlan
from deepinfer.kvcache import native_decode


@dataclass
class SeqSlice:
    """One sequence's part of a forward pass: tokens [num_cached, num_cached + num_new)."""

    block_ids: list[int]
    num_cached: int
    num_new: int

    @property
    def total(self) -> int:
        return self.num_cached + self.num_new


@dataclass
class LayerShape:
    k: tuple[int, ...]  # (num_kv_heads, dk)
    v: tuple[int, ...]  # (num_kv_heads, dv)
    window: int | None = None  # the layer's sliding window; None: it attends every past token


class _ShapeProbe:
    """A KVCache that records each layer's k/v shapes and returns zeros."""

    def __init__(self) -> None:
        self.shapes: list[LayerShape] = []

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        self.shapes.append(LayerShape(tuple(k.shape[1:]), tuple(v.shape[1:]), sliding_window))
        return q.new_zeros(q.shape[0], q.shape[1], v.shape[2])


def probe_layer_shapes(model) -> list[LayerShape]:
    """Run the model once on one token to learn what each layer stores per token, and its window."""
    probe = _ShapeProbe()
    with torch.inference_mode():
        model.forward(torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long), probe,
                      logits_indices=torch.zeros(1, dtype=torch.long))
    return probe.shapes


class KVPool:
    """Paged key/value memory for every layer."""

    def __init__(self, shapes: list[LayerShape], num_blocks: int, block_size: int,
                 dtype: torch.dtype) -> None:
        slots = num_blocks * block_size
        self.block_size = block_size
        self.k = [torch.zeros(slots, *s.k, dtype=dtype) for s in shapes]  # [slots, Hkv, dk]
        self.v = [torch.zeros(slots, *s.v, dtype=dtype) for s in shapes]  # [slots, Hkv, dv]

    @staticmethod
    def bytes_per_block(shapes: list[LayerShape], block_size: int, dtype: torch.dtype) -> int:
        per_token = sum(math.prod(s.k) + math.prod(s.v) for s in shapes)
        return per_token * block_size * torch.empty(0, dtype=dtype).element_size()


def _slot_mapping(seqs: list[SeqSlice], block_size: int) -> torch.Tensor:
    """Pool slot of every new token, in packed order: [T]."""
    slots = []
    for s in seqs:
        for pos in range(s.num_cached, s.total):
            slots.append(s.block_ids[pos // block_size] * block_size + pos % block_size)
    return torch.tensor(slots, dtype=torch.long)


class PagedKVCache:
    """The KVCache protocol over a KVPool for one forward pass of a packed batch.

    The attention plan (which blocks and query rows each call reads, masks) is built once here and
    reused by every layer: `NativePlan` where the native kernel builds (the module docstring says
    why), else `BatchedPlan` (fused, padded per group) or, when `invariant`, `InvariantPlan` (one
    fixed kernel shape per query row).
    """

    def __init__(self, pool: KVPool, seqs: list[SeqSlice], *, invariant: bool = True) -> None:
        self.pool, self.seqs, self.invariant = pool, seqs, invariant
        bs = pool.block_size
        self.num_tokens = sum(s.num_new for s in seqs)
        self.slot_mapping = _slot_mapping(seqs, bs)
        native = native_decode.fast(pool.k[0].dtype, pool.k[0].shape[2], pool.v[0].shape[2])
        if native:
            self.plan = native_decode.NativePlan(seqs, bs, self.num_tokens)
        elif invariant:
            self.plan = InvariantPlan(seqs, bs, self.num_tokens)
        else:
            self.plan = BatchedPlan(seqs, bs, self.num_tokens)

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        k_pool, v_pool = self.pool.k[layer], self.pool.v[layer]
        k_pool.index_copy_(0, self.slot_mapping, k.to(k_pool.dtype))
        v_pool.index_copy_(0, self.slot_mapping, v.to(v_pool.dtype))
        return self.plan.attend(q, k_pool.to(q.dtype), v_pool.to(q.dtype),
                                scale=scale, window=sliding_window).to(v.dtype)
