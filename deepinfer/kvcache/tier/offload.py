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

import atexit
import logging
import queue
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from deepinfer.kvcache.tier.disk import DiskStore
from deepinfer.kvcache.tier.format import BlockFormatError, BlockRecord, Expected, decode, encode
from deepinfer.kvcache.tier.host import HostStore
from deepinfer.kvcache.tier.identity import block_digests, model_identity, next_digest

log = logging.getLogger("deepinfer.kvcache.tier")


@dataclass
class TierConfig:
    dir: str | None = None         # cache directory for block files; None: no disk tier
    disk_bytes: int = 8 << 30      # bound on the block files under `dir` (all models')
    host_bytes: int = 0            # bound on block records kept in host memory
    max_pending: int = 4096        # blocks queued for the writer; more are not written (a cache)

    @property
    def enabled(self) -> bool:
        return self.dir is not None or self.host_bytes > 0


@dataclass
class TierStats:
    stored_blocks: int = 0         # written by this process
    loaded_blocks: int = 0         # copied back into the pool instead of recomputed
    rejected_blocks: int = 0       # files ignored: corrupt, truncated, another model's
    dropped_blocks: int = 0        # not written: the queue was full, or a write failed


class KVTier:
    def __init__(self, model: Any, pool: Any, shapes: list[Any], block_size: int, config: TierConfig) -> None:
        """pool: a KVPool (k, v lists of [slots, Hkv, d]); shapes: its per-layer LayerShapes."""
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
        self._pending: dict[str, BlockRecord] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._warned: set[str] = set()
        self._writer = threading.Thread(target=self._write_loop, name="kv-tier-writer", daemon=True)
        self._writer.start()
        atexit.register(self.close)

    # -- writing ----------------------------------------------------------------------------------
    def registered(self, block: int, key: int, parent: int | None, tokens: tuple[int, ...]) -> None:
        parent_digest = self.identity.digest if parent is None else self.digests.get(parent)
        if parent_digest is None:
            return
        digest = next_digest(parent_digest, tokens)
        self._remember(key, digest)
        name = digest.hex()
        with self._lock:
            if name in self._pending or len(self._pending) >= self.config.max_pending:
                self.stats.dropped_blocks += name not in self._pending
                return
        if self.host.get(name) is not None or (self.disk is not None and self.disk.contains(name)):
            return
        start = block * self.block_size
        end = start + self.block_size
        record = BlockRecord(self.identity.hex, name, None if parent is None else parent_digest.hex(), list(tokens),
                             [k[start:end].clone() for k in self.pool.k], [v[start:end].clone() for v in self.pool.v])
        with self._lock:
            self._pending[name] = record
        self._queue.put(name)

    def _write_loop(self) -> None:
        while (name := self._queue.get()) is not None:
            try:
                with self._lock:
                    record = self._pending[name]
                record.k = [t.to("cpu") for t in record.k]   # (a GPU pool: the copy to host happens here)
                record.v = [t.to("cpu") for t in record.v]
                self.host.put(name, record)
                if self.disk is not None and not self.disk.put(name, encode(record)):
                    self.stats.dropped_blocks += 1
                else:
                    self.stats.stored_blocks += 1
            except Exception as exc:  # a full disk, a removed directory: the tier is a cache
                self.stats.dropped_blocks += 1
                self._warn("write", f"KV tier: writing block {name} failed: {exc}")
            finally:
                with self._lock:
                    self._pending.pop(name, None)
                self._queue.task_done()
        self._queue.task_done()

    def flush(self) -> None:
        """Wait until every queued block is written."""
        if self._writer.is_alive():
            self._queue.join()

    def close(self) -> None:
        if self._writer.is_alive():
            self.flush()
            self._queue.put(None)
            self._writer.join(timeout=10)

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
        with self._lock:
            record = self._pending.get(name)
        record = record or self.host.get(name)
        if record is not None:
            return record if record.tokens == tokens else None
        if self.disk is None:
            return None
        data = self.disk.get(name)
        if data is None:
            return None
        expected = Expected(self.identity.hex, name, tokens, self.dtype, self.k_shapes, self.v_shapes)
        try:
            record = decode(data, expected)
        except BlockFormatError as exc:
            self.stats.rejected_blocks += 1
            self._warn(name, f"KV tier: ignoring {self.disk.path(name)}: {exc}")
            self.disk.remove(name)    # so a good copy can be written in its place
            return None
        self.host.put(name, record)
        return record

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

    def _warn(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning(message)
