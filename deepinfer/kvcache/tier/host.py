"""Block records in host memory, bounded in bytes, least recently used out first.

The tier's first level (on a GPU: CPU memory the device pool spills to); also holds what the
background writer has not written to disk yet, so a block evicted a moment ago is not a miss.
Thread safe: the writer thread adds, the step thread reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from deepinfer.kvcache.tier.format import BlockRecord


class HostStore:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.used = max_bytes, 0
        self._records: OrderedDict[str, BlockRecord] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, name: str) -> BlockRecord | None:
        with self._lock:
            record = self._records.get(name)
            if record is not None:
                self._records.move_to_end(name)
            return record

    def put(self, name: str, record: BlockRecord) -> None:
        if record.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._records.pop(name, None)
            self.used += record.nbytes - (old.nbytes if old else 0)
            self._records[name] = record
            while self.used > self.max_bytes:
                _, dropped = self._records.popitem(last=False)
                self.used -= dropped.nbytes

    def __len__(self) -> int:
        return len(self._records)
