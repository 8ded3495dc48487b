"""`KVTier`: the glue between the paged pool's prefix cache and the tier's stores.

Two calls from `BlockManager` (its `tier` hook):
- `registered(block, key, parent, tokens)`: a block became full, computed and cached. Its K/V
  slots are cloned now (the pool block may be reused by the next step) and queued; the writer
  thread moves them to the CPU, into the host store and to disk. Every registered block is
  written once (write-through), so a block evicted from the pool later loses nothing and a
  process that exits or crashes leaves at most its queue unwritten.
- `extend(blocks, table, token_ids)`: the pool's prefix cache stopped at a miss; the next blocks
  are looked up in the tier (the writer's queue, host memory, disk, in that order) and copied
  into free pool blocks the block manager adopts, until the first one missing or unreadable.
The block manager's in-memory chain keys map to tier keys (identity.py) through `digests`, kept
for as many keys as the pool has blocks, several times over: a chain whose parent key was
forgotten is just not written.
"""

from __future__ import annotations

import functools
import queue
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from deepinfer.errors import UserError
from deepinfer.kvcache.tier.disk import DiskStore
from deepinfer.kvcache.tier.format import BlockRecord, Expected, encode
from deepinfer.kvcache.tier.host import HostStore
from deepinfer.kvcache.tier.identity import block_digests, model_identity, next_digest
from deepinfer.kvcache.tier.prefetch import Prefetcher, load, warn_once


@dataclass
class TierConfig:
    dir: str | None = None         # cache directory for block files; None: no disk tier
    disk_bytes: int = 8 << 30      # bound on the block files under `dir` (all models')
    host_bytes: int = 0            # bound on block records kept in host memory
    max_pending: int = 4096        # blocks queued for the writer; more are not written (a cache)
    prefetch_bytes: int = 256 << 20  # blocks read ahead from disk for queued requests

    @property
    def enabled(self) -> bool:
        self.check()
        return self.dir is not None or self.host_bytes > 0

    def check(self) -> None:
        for name, value in (("kv_tier_bytes", self.disk_bytes), ("kv_tier_host_bytes", self.host_bytes)):
            if not isinstance(value, int) or value < 0:
                raise UserError(f"{name} must be a number of bytes >= 0, got {value!r}")


@dataclass
class TierStats:
    stored_blocks: int = 0         # written by this process
    loaded_blocks: int = 0         # copied back into the pool instead of recomputed
    rejected_blocks: int = 0       # files ignored: corrupt, truncated, another model's
    dropped_blocks: int = 0        # not written: the queue was full, or a write failed


class KVTier:
    def __init__(self, model: Any, pool: Any, shapes: list[Any], block_size: int, config: TierConfig) -> None:
        """pool: a KVPool (k, v lists of [slots, Hkv, d]); shapes: its per-layer LayerShapes."""
        config.check()
        self.pool, self.block_size, self.config = pool, block_size, config
        self.dtype = pool.k[0].dtype
        self.identity = model_identity(model, [(s.k, s.v) for s in shapes], block_size, self.dtype)
        self.k_shapes = [(block_size, *s.k) for s in shapes]
        self.v_shapes = [(block_size, *s.v) for s in shapes]
        self.disk = DiskStore(config.dir, self.identity.hex[:16], config.disk_bytes) if config.dir else None
        self.host = HostStore(config.host_bytes)
        self.stats = TierStats()
        self.digests: OrderedDict[int, bytes] = OrderedDict()   # chain key -> tier key
        self.max_digests = 4 * pool.k[0].shape[0] // block_size + 1024
        self._warned: set[str] = set()
        self.writer = _Writer(self.host, self.disk, self.stats, config.max_pending, self._warned)
        self.prefetched = HostStore(config.prefetch_bytes)
        self.prefetcher = None
        if self.disk is not None:
            expected_of = functools.partial(_expected_chain, self.identity, block_size, self.dtype,
                                            self.k_shapes, self.v_shapes)
            present = functools.partial(_in_memory, self.writer, self.host, self.prefetched)
            self.prefetcher = Prefetcher(self.disk, self.prefetched, expected_of, present, self.stats, self._warned)
        # the threads hold no reference to the tier (nor its pool; the prefetcher's callables are
        # functions of plain values): when the tier is collected, or at exit, they finish and stop
        weakref.finalize(self, _stop, self.writer, self.prefetcher)

    # -- writing ----------------------------------------------------------------------------------
    def registered(self, block: int, key: int, parent: int | None, tokens: tuple[int, ...]) -> None:
        parent_digest = self.identity.digest if parent is None else self.digests.get(parent)
        if parent_digest is None:
            return
        digest = next_digest(parent_digest, tokens)
        self._remember(key, digest)
        name = digest.hex()
        if self.writer.has(name) or self.host.get(name) is not None or (self.disk is not None and self.disk.contains(name)):
            return
        start = block * self.block_size
        end = start + self.block_size
        record = BlockRecord(self.identity.hex, name, None if parent is None else parent_digest.hex(), list(tokens),
                             [k[start:end].clone() for k in self.pool.k], [v[start:end].clone() for v in self.pool.v])
        self.writer.submit(name, record)

    def flush(self) -> None:
        """Wait until every queued block is written."""
        self.writer.flush()

    def close(self) -> None:
        """Write what is queued and stop the threads (later blocks are neither written nor read ahead)."""
        _stop(self.writer, self.prefetcher)

    # -- reading ahead ----------------------------------------------------------------------------
    def prefetch(self, token_ids: list[int]) -> None:
        """A request was queued: read its prefix's blocks from disk now, off the step thread."""
        if self.prefetcher is not None and len(token_ids) > self.block_size:
            self.prefetcher.submit(token_ids)

    # -- loading ----------------------------------------------------------------------------------
    def extend(self, blocks: Any, table: Any, token_ids: list[int]) -> int:
        """Continue `table`'s prefix hit from the tier; returns the blocks loaded."""
        bs = self.block_size
        full = (len(token_ids) - 1) // bs            # the last token is always computed
        start = len(table.block_ids)
        if full == 0:
            return 0
        digests = block_digests(self.identity, token_ids, bs, full)
        for index, key in enumerate(table.hashes):
            self._remember(key, digests[index])
        loaded = 0
        for index in range(start, full):
            tokens = token_ids[index * bs:(index + 1) * bs]
            record = self._find(digests[index].hex(), tokens)
            if record is None:
                break
            block = blocks.adopt(table, tuple(tokens))
            if block is None:
                break
            self._write_pool(block, record)
            self._remember(table.hashes[-1], digests[index])
            loaded += 1
        self.stats.loaded_blocks += loaded
        return loaded

    def _find(self, name: str, tokens: list[int]) -> BlockRecord | None:
        record = self.writer.pending(name) or self.host.get(name) or self.prefetched.get(name)
        if record is not None:
            return record if record.tokens == tokens else None
        if self.disk is None:
            return None
        record = load(self.disk, self._expected(name, tokens), self.stats, self._warned)
        if record is not None:
            self.host.put(name, record)
        return record

    def _expected(self, name: str, tokens: list[int]) -> Expected:
        return Expected(self.identity.hex, name, list(tokens), self.dtype, self.k_shapes, self.v_shapes)

    def _write_pool(self, block: int, record: BlockRecord) -> None:
        start = block * self.block_size
        with torch.inference_mode():
            for layer, (k, v) in enumerate(zip(self.pool.k, self.pool.v)):
                k[start:start + self.block_size].copy_(record.k[layer])   # [block_size, Hkv, dk]
                v[start:start + self.block_size].copy_(record.v[layer])

    def _remember(self, key: int, digest: bytes) -> None:
        self.digests[key] = digest
        self.digests.move_to_end(key)
        if len(self.digests) > self.max_digests:
            self.digests.popitem(last=False)


def _expected_chain(identity, block_size: int, dtype, k_shapes, v_shapes, token_ids: list[int]) -> list[Expected]:
    """What each full block of a prompt (but its last token) must be, in order."""
    full = (len(token_ids) - 1) // block_size
    return [Expected(identity.hex, digest.hex(), token_ids[i * block_size:(i + 1) * block_size], dtype,
                     k_shapes, v_shapes)
            for i, digest in enumerate(block_digests(identity, token_ids, block_size, full))]


def _in_memory(writer: "_Writer", host: HostStore, prefetched: HostStore, name: str) -> bool:
    return writer.has(name) or host.get(name) is not None or prefetched.get(name) is not None


def _stop(writer: "_Writer", prefetcher: Prefetcher | None) -> None:
    writer.stop()
    if prefetcher is not None:
        prefetcher.stop()


class _Writer:
    """The background thread that moves queued block records to host memory and disk."""

    def __init__(self, host: HostStore, disk: DiskStore | None, stats: TierStats, max_pending: int,
                 warned: set[str]) -> None:
        self.host, self.disk, self.stats, self.max_pending, self.warned = host, disk, stats, max_pending, warned
        self._pending: dict[str, BlockRecord] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="kv-tier-writer", daemon=True)
        self._thread.start()

    def has(self, name: str) -> bool:
        with self._lock:
            return name in self._pending

    def pending(self, name: str) -> BlockRecord | None:
        with self._lock:
            return self._pending.get(name)

    def submit(self, name: str, record: BlockRecord) -> None:
        with self._lock:
            if len(self._pending) >= self.max_pending or not self._thread.is_alive():
                self.stats.dropped_blocks += 1
                return
            self._pending[name] = record
        self._queue.put(name)

    def _loop(self) -> None:
        while (name := self._queue.get()) is not None:
            try:
                record = self.pending(name)
                record.k = [t.to("cpu") for t in record.k]   # (a GPU pool: the copy to host happens here)
                record.v = [t.to("cpu") for t in record.v]
                self.host.put(name, record)
                if self.disk is not None and not self.disk.put(name, encode(record)):
                    self.stats.dropped_blocks += 1
                else:
                    self.stats.stored_blocks += 1
            except Exception as exc:  # a full disk, a removed directory: the tier is a cache
                self.stats.dropped_blocks += 1
                warn_once(self.warned, "write", f"KV tier: writing block {name} failed: {exc}")
            finally:
                with self._lock:
                    self._pending.pop(name, None)
                self._queue.task_done()
        self._queue.task_done()

    def flush(self) -> None:
        if self._thread.is_alive():
            self._queue.join()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=30)
