"""Block files under a cache directory, bounded in bytes, least recently used out first.

Layout: `<root>/<model identity hex[:16]>/<key hex>.kvb`. Writes go to a temporary file in the
same directory and are renamed into place, so a reader (this process or another sharing the
directory) sees a whole file or none; a read touches the file's mtime, the LRU clock shared by
every process. The byte bound covers every model's files under the root: when this process's
running estimate passes it, the directory is rescanned (other processes write too) and the
oldest files are removed. A file another process removed meanwhile is simply a miss.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from deepinfer.errors import UserError

SUFFIX = ".kvb"


class DiskStore:
    def __init__(self, root: str | os.PathLike, namespace: str, max_bytes: int) -> None:
        self.root, self.max_bytes = Path(root).expanduser(), max_bytes
        self.dir = self.root / namespace
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.dir, prefix=".probe-", delete=True)
            probe.close()
        except OSError as exc:
            raise UserError(f"kv_tier_dir {str(self.root)!r} is not a writable directory: {exc}") from None
        self.used = sum(size for _, size, _ in self._scan())

    def path(self, name: str) -> Path:
        return self.dir / (name + SUFFIX)

    def get(self, name: str) -> bytes | None:
        path = self.path(name)
        try:
            data = path.read_bytes()
            os.utime(path)  # most recently used
        except OSError:
            return None
        return data

    def contains(self, name: str) -> bool:
        return self.path(name).exists()

    def put(self, name: str, data: bytes) -> bool:
        """Write the block file atomically; False when it cannot fit the bound at all."""
        if len(data) > self.max_bytes:
            return False
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, self.path(name))
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.used += len(data)
        if self.used > self.max_bytes:
            self.evict()
        return True

    def remove(self, name: str) -> None:
        self.path(name).unlink(missing_ok=True)

    def _scan(self) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every block file under the root, any model's."""
        files = []
        for sub in self.root.iterdir() if self.root.exists() else ():
            if not sub.is_dir():
                continue
            for entry in os.scandir(sub):
                if entry.name.endswith(SUFFIX) and not entry.name.startswith("."):
                    try:
                        stat = entry.stat()
                    except OSError:
                        continue
                    files.append((stat.st_mtime, stat.st_size, Path(entry.path)))
        return files

    def evict(self) -> None:
        """Remove least recently used files until the root holds at most max_bytes."""
        files = sorted(self._scan(), key=lambda f: f[0])
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
        self.used = total
