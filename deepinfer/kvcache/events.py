"""KV events: what the prefix cache gained and lost, for a router that tracks it from outside.

The block manager publishes one event per change of its prefix cache, in order:
`BlockStored` when a full computed block is registered under its hash chain, `BlockRemoved`
when a registered block is evicted (its KV overwritten), `AllCleared` when the whole cache is
dropped. The engine drains them (`Engine.drain_kv_events`), and a data-parallel replica hands
them to the router, which rebuilds which prefix blocks each replica holds.

Block hashes are the block manager's `chain_hash` values: stable within one process only
(Python's `hash` of None is per process before 3.12), so an event also carries the block's
token ids and a subscriber keys blocks by its own hash of (parent key, tokens).
Publishing costs nothing until a subscriber enables the log.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BlockStored:
    block_hash: int
    parent_hash: int | None  # None: the first block of a sequence
    token_ids: tuple[int, ...]  # the block's tokens (block_size of them)


@dataclass(frozen=True)
class BlockRemoved:
    block_hash: int


@dataclass(frozen=True)
class AllCleared:
    pass


KVEvent = BlockStored | BlockRemoved | AllCleared


@dataclass
class KVEventLog:
    """Events since the last drain, oldest first; bounded so a subscriber that stops reading
    cannot grow it without limit (overflow collapses the log to one `AllCleared`, which makes
    a subscriber forget this cache: a conservative view, never a wrong one)."""

    max_events: int = 1 << 16
    events: list[KVEvent] = field(default_factory=list)
    # the engine thread publishes while a replica's server thread drains
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def publish(self, event: KVEvent) -> None:
        with self._lock:
            if len(self.events) >= self.max_events:
                self.events = [AllCleared()]
            self.events.append(event)

    def drain(self) -> list[KVEvent]:
        with self._lock:
            events, self.events = self.events, []
        return events
