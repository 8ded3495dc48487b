"""Reading tier blocks from disk: checked decoding, and a thread that reads ahead of the step.

A request's prefix blocks are read when the request is queued (`Prefetcher.submit`), by a
background thread, into a bounded host buffer, so that the step which admits it copies them from
memory; a block not read yet by then is read on the step thread (`load`), as without prefetch.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

from deepinfer.kvcache.tier.disk import DiskStore
from deepinfer.kvcache.tier.format import BlockFormatError, BlockRecord, Expected, decode
from deepinfer.kvcache.tier.host import HostStore

log = logging.getLogger("deepinfer.kvcache.tier")


def warn_once(warned: set[str], what: str, message: str) -> None:
    if what not in warned:
        warned.add(what)
        log.warning(message)


def load(disk: DiskStore, expected: Expected, stats, warned: set[str]) -> BlockRecord | None:
    """The block file named expected.key, checked; None (with a warning, the file removed) if bad."""
    data = disk.get(expected.key)
    if data is None:
        return None
    try:
        return decode(data, expected)
    except BlockFormatError as exc:
        stats.rejected_blocks += expected.key not in warned   # once a file, whichever thread reads it
        warn_once(warned, expected.key, f"KV tier: ignoring {disk.path(expected.key)}: {exc}")
        disk.remove(expected.key)    # so a good copy can be written in its place
        return None


class Prefetcher:
    """One daemon thread reading queued prompts' blocks into `buffer`, in order, until a miss."""

    def __init__(self, disk: DiskStore, buffer: HostStore, expected_of: Callable[[list[int]], list[Expected]],
                 present: Callable[[str], bool], stats, warned: set[str]) -> None:
        self.disk, self.buffer, self.expected_of, self.present = disk, buffer, expected_of, present
        self.stats, self.warned = stats, warned
        self._queue: queue.Queue[list[int] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="kv-tier-prefetch", daemon=True)
        self._thread.start()

    def submit(self, token_ids: list[int]) -> None:
        if self._thread.is_alive():
            self._queue.put(list(token_ids))

    def _loop(self) -> None:
        while (token_ids := self._queue.get()) is not None:
            try:
                for expected in self.expected_of(token_ids):
                    if self.present(expected.key):
                        continue
                    record = load(self.disk, expected, self.stats, self.warned)
                    if record is None:
                        break
                    self.buffer.put(expected.key, record)
            except Exception as exc:  # never let a read-ahead take the engine down: the step reads again
                warn_once(self.warned, "prefetch", f"KV tier: read-ahead failed: {exc}")
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def join(self) -> None:
        if self._thread.is_alive():
            self._queue.join()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=30)
