"""A prompt's full KV blocks out of one engine's prefix cache, over torch.distributed, into another's.

Block format (what moves, and what another transport such as NIXL would carry instead):
`KVBlocks.tokens` [n * block_size] the token ids the blocks hold (the receiver rebuilds the
prefix cache's chain hashes from them, so no hash travels), and per layer `k[l]` [n, block_size,
num_kv_heads, dk] and `v[l]` [n, block_size, num_kv_heads, dv] in the pool's dtype. On the wire:
a header [n, block_size] (int64), the tokens (int64), then k[0], v[0], k[1], ... with blocking
send/recv, whose wait the process group's timeout bounds.

Only full blocks move: the receiving engine finds them as a prefix-cache hit and computes the
prompt's last partial block itself, exactly as a single engine with that prefix cached would.
Paged storage with a plain `BlockManager` only (not sliding-window or DeepSeek-V4's hybrid cache).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from deepinfer.kvcache.block_manager import BlockManager
from deepinfer.kvcache.storage import PagedStorage
from deepinfer.parallel.group import ParallelError


@dataclass
class KVBlocks:
    tokens: list[int]
    k: list[torch.Tensor]  # per layer [n, block_size, Hkv, dk]
    v: list[torch.Tensor]  # per layer [n, block_size, Hkv, dv]

    @property
    def num_blocks(self) -> int:
        return self.k[0].shape[0] if self.k else 0

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)


def _storage(engine) -> PagedStorage:
    kv = engine.kv
    if not isinstance(kv, PagedStorage) or type(kv.blocks) is not BlockManager:
        raise ParallelError("KV block transfer needs paged storage with full-attention layers; "
                            f"this model uses {type(kv).__name__} / {type(kv.blocks).__name__}")
    if not kv.blocks.enable_prefix_caching:
        raise ParallelError("KV block transfer needs enable_prefix_caching=True on both engines")
    return kv


def export_prefix(engine, prompt: list[int]) -> KVBlocks:
    """The cached full blocks of `prompt` in `engine` (run the prompt there first)."""
    kv = _storage(engine)
    block_ids = torch.tensor(kv.blocks.match_prefix(prompt), dtype=torch.long)
    bs = kv.blocks.block_size
    k = [pool.view(-1, bs, *pool.shape[1:]).index_select(0, block_ids) for pool in kv.pool.k]
    v = [pool.view(-1, bs, *pool.shape[1:]).index_select(0, block_ids) for pool in kv.pool.v]
    return KVBlocks(prompt[:len(block_ids) * bs], k, v)


def import_prefix(engine, blocks: KVBlocks) -> int:
    """Write `blocks` into fresh blocks of `engine` and register them in its prefix cache; returns
    the blocks imported (0 when the cache has no room: the engine then simply recomputes)."""
    kv = _storage(engine)
    manager, n = kv.blocks, blocks.num_blocks
    bs = manager.block_size
    table = manager.new_table()
    if n == 0 or not manager.grow(table, n * bs):
        return 0
    ids = torch.tensor(table.block_ids, dtype=torch.long)
    for pool, k in zip(kv.pool.k, blocks.k):
        pool.view(-1, bs, *pool.shape[1:]).index_copy_(0, ids, k.to(pool.dtype))
    for pool, v in zip(kv.pool.v, blocks.v):
        pool.view(-1, bs, *pool.shape[1:]).index_copy_(0, ids, v.to(pool.dtype))
    manager.commit(table, blocks.tokens, n * bs)
    manager.free(table)  # cached and evictable, like blocks a finished request leaves behind
    return n


def _check(op, *args) -> None:
    try:
        op(*args)
    except RuntimeError as exc:
        raise ParallelError(f"KV block transfer failed on rank {dist.get_rank()}: {exc}") from exc


def send_blocks(blocks: KVBlocks, dst: int, block_size: int) -> None:
    _check(dist.send, torch.tensor([blocks.num_blocks, block_size]), dst)
    if blocks.num_blocks:
        _check(dist.send, torch.tensor(blocks.tokens, dtype=torch.long), dst)
        for k, v in zip(blocks.k, blocks.v):
            _check(dist.send, k.contiguous(), dst)
            _check(dist.send, v.contiguous(), dst)


def recv_blocks(engine, src: int) -> KVBlocks:
    """Receive one KVBlocks message shaped for `engine`'s pool."""
    kv = _storage(engine)
    header = torch.empty(2, dtype=torch.long)
    _check(dist.recv, header, src)
    n, bs = header.tolist()
    if bs != kv.blocks.block_size:
        raise ParallelError(f"the prefill worker sends {bs}-token blocks, this decode engine uses "
                            f"{kv.blocks.block_size}: give both the same block_size")
    k, v = [], []
    if n == 0:
        return KVBlocks([], [], [])
    tokens = torch.empty(n * bs, dtype=torch.long)
    _check(dist.recv, tokens, src)
    for k_pool, v_pool in zip(kv.pool.k, kv.pool.v):
        k.append(torch.empty(n, bs, *k_pool.shape[1:], dtype=k_pool.dtype))
        v.append(torch.empty(n, bs, *v_pool.shape[1:], dtype=v_pool.dtype))
        _check(dist.recv, k[-1], src)
        _check(dist.recv, v[-1], src)
    return KVBlocks(tokens.tolist(), k, v)
