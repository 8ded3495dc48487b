"""Token pages without prefix caching: a free list, and page tables whose head can be given back.

A `PageTable` lists the pages of one sequence in position order (page i holds positions
[i * page_size, (i + 1) * page_size)); pages whose rows no later step reads (out of every
layer's sliding window, or before a replay's start) are `RELEASED` in place, so indices stay
positions. Pure Python, no tensors.
"""

from __future__ import annotations

from collections import deque

RELEASED = -1


class PagePool:
    def __init__(self, num_pages: int) -> None:
        self.num_pages = num_pages
        self.free_pages: deque[int] = deque(range(num_pages))

    @property
    def num_free(self) -> int:
        return len(self.free_pages)

    @property
    def num_used(self) -> int:
        return self.num_pages - len(self.free_pages)

    @staticmethod
    def needed(table: list[int], num_pages: int, first_page: int) -> int:
        """Pages to take so that `table` covers `num_pages` pages (those before first_page stay released)."""
        return max(0, num_pages - max(len(table), first_page))

    def grow(self, table: list[int], num_pages: int, first_page: int) -> None:
        """Extend `table` to num_pages entries; the caller checked `needed` against `num_free`."""
        while len(table) < num_pages:
            table.append(RELEASED if len(table) < first_page else self.free_pages.popleft())

    def release_before(self, table: list[int], page: int) -> None:
        """Give back the pages before index `page` (they hold no row any step still reads)."""
        for index in range(min(page, len(table))):
            if table[index] != RELEASED:
                self.free_pages.append(table[index])
                table[index] = RELEASED

    def free(self, table: list[int]) -> None:
        self.release_before(table, len(table))
        table.clear()
