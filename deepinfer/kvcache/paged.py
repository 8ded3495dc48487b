"""The paged KV pool and the per-forward `PagedKVCache` view the model attends through.

`KVPool` holds, per layer, k [num_slots, num_kv_heads, dk] and v [num_slots,
num_kv_heads, dv] with num_slots = num_blocks * block_size (k and v head dims
may differ: MLA). A `PagedKVCache` describes one forward pass over a packed
batch of sequences (block table, tokens already cached, new tokens each) and
implements the model's `KVCache` protocol: it writes the new keys/values into
their slots first, then attends each new token over its own sequence's paged KV.

Batch invariance (`invariant=True`): queries are cut into tiles of `q_tile`
tokens of one sequence and keys into chunks of `kv_tile` absolute positions, so
every matmul has one fixed shape and each query's reductions run in the same
order in prefill, chunked prefill and decode, whatever else is in the batch.
Tiles of all sequences are stacked along the batch dimension of one bmm per
chunk index (the bmm's per-item result does not depend on the batch count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from deepinfer.kvcache.batched import BatchedPlan


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


class _ShapeProbe:
    """A KVCache that records each layer's k/v shapes and returns zeros."""

    def __init__(self) -> None:
        self.shapes: list[LayerShape] = []

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        self.shapes.append(LayerShape(tuple(k.shape[1:]), tuple(v.shape[1:])))
        return q.new_zeros(q.shape[0], q.shape[1], v.shape[2])


def probe_layer_shapes(model) -> list[LayerShape]:
    """Run the model once on one token to learn what each layer stores per token."""
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


def _slots(block_ids: list[int], block_size: int, start: int, stop: int) -> torch.Tensor:
    blocks = torch.tensor(block_ids, dtype=torch.long)
    positions = torch.arange(start, stop)
    return blocks[positions // block_size] * block_size + positions % block_size


class PagedKVCache:
    """The KVCache protocol over a KVPool for one forward pass of a packed batch."""

    def __init__(self, pool: KVPool, seqs: list[SeqSlice], *, invariant: bool = True,
                 q_tile: int = 4, kv_tile: int = 128) -> None:
        self.pool, self.seqs, self.invariant = pool, seqs, invariant
        self.q_tile, self.kv_tile = q_tile, kv_tile
        bs = pool.block_size
        self.num_tokens = sum(s.num_new for s in seqs)
        self.slot_mapping = torch.cat([_slots(s.block_ids, bs, s.num_cached, s.total) for s in seqs])
        if invariant:
            self._plan_tiles()
        else:
            self.plan = BatchedPlan(seqs, bs, self.num_tokens)

    def _plan_tiles(self) -> None:
        """Cut every sequence's new tokens into q tiles; order tiles by chunk count, longest first."""
        qt, kt, bs = self.q_tile, self.kv_tile, self.pool.block_size
        tiles = []  # (num_chunks, token indices, positions, kv slots)
        offset = 0
        for s in self.seqs:
            chunks_total = -(-s.total // kt)
            slots = torch.zeros(chunks_total * kt, dtype=torch.long)  # padding keys: masked by causality
            slots[:s.total] = _slots(s.block_ids, bs, 0, s.total)
            for start in range(0, s.num_new, qt):
                count = min(qt, s.num_new - start)
                index = torch.full((qt,), self.num_tokens, dtype=torch.long)  # pad -> a zero row
                index[:count] = torch.arange(offset + start, offset + start + count)
                pos = torch.full((qt,), -1, dtype=torch.long)                 # pad -> sees nothing
                pos[:count] = torch.arange(s.num_cached + start, s.num_cached + start + count)
                num_chunks = int(pos.max()) // kt + 1
                tiles.append((num_chunks, index, pos, slots[:num_chunks * kt]))
            offset += s.num_new
        tiles.sort(key=lambda t: -t[0])
        self.tile_chunks = [t[0] for t in tiles]
        self.tile_index = torch.stack([t[1] for t in tiles])           # [I, qt]
        self.tile_pos = torch.stack([t[2] for t in tiles])             # [I, qt]
        max_chunks = self.tile_chunks[0]
        kv = torch.zeros(len(tiles), max_chunks * kt, dtype=torch.long)
        for i, t in enumerate(tiles):
            kv[i, :t[3].numel()] = t[3]
        self.tile_kv_slots = kv.view(len(tiles), max_chunks, kt)      # [I, C, kt]
        # number of tiles still active at chunk c (tiles are sorted by chunk count)
        self.active = [sum(1 for n in self.tile_chunks if n > c) for c in range(max_chunks)]

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        self.pool.k[layer].index_copy_(0, self.slot_mapping, k.to(self.pool.k[layer].dtype))
        self.pool.v[layer].index_copy_(0, self.slot_mapping, v.to(self.pool.v[layer].dtype))
        if self.invariant:
            return self._attend_tiled(layer, q, scale, sliding_window).to(v.dtype)
        return self.plan.attend(q, self.pool.k[layer].to(q.dtype), self.pool.v[layer].to(q.dtype),
                                scale=scale, window=sliding_window).to(v.dtype)

    def _attend_tiled(self, layer, q, scale, window):
        T, H, dk = q.shape
        k_pool, v_pool = self.pool.k[layer], self.pool.v[layer]
        hkv, dv = k_pool.shape[1], v_pool.shape[2]
        group, qt, kt = H // hkv, self.q_tile, self.kv_tile
        num_tiles = self.tile_index.shape[0]
        rows = qt * group
        q_pad = torch.cat([q.float(), q.new_zeros(1, H, dk, dtype=torch.float32)])
        qi = q_pad[self.tile_index].view(num_tiles, qt, hkv, group, dk)
        qi = qi.permute(0, 2, 1, 3, 4).reshape(num_tiles, hkv, rows, dk)       # [I, Hkv, qt*G, dk]
        qpos = self.tile_pos.repeat_interleave(group, dim=1).view(num_tiles, 1, rows, 1)
        m = torch.full((num_tiles, hkv, rows, 1), -math.inf)
        l = torch.zeros(num_tiles, hkv, rows, 1)
        acc = torch.zeros(num_tiles, hkv, rows, dv)
        for c, a in enumerate(self.active):
            slots = self.tile_kv_slots[:a, c]                                  # [A, kt]
            kc = k_pool[slots].float().permute(0, 2, 3, 1)                     # [A, Hkv, dk, kt]
            vc = v_pool[slots].float().permute(0, 2, 1, 3)                     # [A, Hkv, kt, dv]
            s = torch.matmul(qi[:a], kc) * scale                               # [A, Hkv, rows, kt]
            kpos = torch.arange(c * kt, (c + 1) * kt).view(1, 1, 1, kt)
            allowed = kpos <= qpos[:a]
            if window is not None:
                allowed &= kpos > qpos[:a] - window
            s = s.masked_fill(~allowed, -math.inf)
            m_new = torch.maximum(m[:a], s.amax(dim=-1, keepdim=True))
            m_safe = m_new.masked_fill(torch.isinf(m_new), 0.0)  # rows that saw no key yet
            alpha = torch.exp(m[:a] - m_safe)
            p = torch.exp(s - m_safe)
            l[:a] = l[:a] * alpha + p.sum(dim=-1, keepdim=True)
            acc[:a] = acc[:a] * alpha + torch.matmul(p, vc)
            m[:a] = m_new
        out = acc / l.masked_fill(l == 0, 1.0)                                 # [I, Hkv, rows, dv]
        out = out.view(num_tiles, hkv, qt, group, dv).permute(0, 2, 1, 3, 4).reshape(num_tiles * qt, H, dv)
        result = torch.zeros(T + 1, H, dv)
        result.index_copy_(0, self.tile_index.reshape(-1), out)  # pad rows all land on row T
        return result[:T]
