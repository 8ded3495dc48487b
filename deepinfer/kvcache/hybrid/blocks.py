"""Block bookkeeping of the hybrid cache: what each sequence holds in each page group, and the prefix cache.

A `HybridTable` is one sequence's pages: compressed pages (a `BlockTable` of the prefix-cache
`BlockManager`, whose blocks are compressed pages of `page_tokens` tokens), window pages and,
per compress rate, pending pages (token pages, `pages.py`). `HybridBlockManager` answers the
scheduler's questions (grow, free, prefix hits, commit) across all groups at once, so that
admission and preemption see what a request really costs:

- window and pending pages are taken as tokens arrive and given back at `commit` as soon as no
  later step reads them (out of the sliding window / before the partial windows still pooling):
  a sequence holds a bounded number of them whatever its length;
- compressed pages are kept for the whole sequence; full ones are registered in the prefix
  cache. A hit restores their entries, and the window rows the cache does not keep are rebuilt
  by replay (`replay.py`): the sequence restarts computing at the replay's start, before the hit.
Pure Python, no tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deepinfer.kvcache.block_manager import BlockManager, BlockTable, PrefixCacheStats
from deepinfer.kvcache.hybrid.layout import HybridLayout
from deepinfer.kvcache.hybrid.pages import PagePool
from deepinfer.kvcache.replay import ReplayPolicy


@dataclass
class HybridTable:
    entries: BlockTable = field(default_factory=BlockTable)  # compressed pages
    window: list[int] = field(default_factory=list)  # token pages of window rows
    pending: dict[int, list[int]] = field(default_factory=dict)  # rate -> token pages of pending rows
    first: int = 0  # first position with window / pending rows (a replay's start)
    cached_through: int = 0  # tokens whose entries came from the prefix cache

    def pending_pages(self, rate: int) -> list[int]:
        return self.pending.setdefault(rate, [])


@dataclass(frozen=True)
class PoolSizes:
    window_pages: int
    pending_pages: dict[int, int]
    entry_pages: int


def token_pages_for(layout: HybridLayout, max_num_seqs: int, max_batched_tokens: int, reach: int) -> int:
    """Token pages enough for `max_num_seqs` sequences each holding `reach` past tokens, plus one
    step's new tokens (every sequence may straddle one more page)."""
    bs = layout.block_size
    return max_num_seqs * (-(-reach // bs) + 2) + -(-max_batched_tokens // bs)


class HybridBlockManager:
    def __init__(self, layout: HybridLayout, sizes: PoolSizes, enable_prefix_caching: bool = True,
                 replay: ReplayPolicy | None = None) -> None:
        self.layout, self.sizes = layout, sizes
        self.replay = replay or ReplayPolicy()
        self.entries = BlockManager(sizes.entry_pages, layout.page_tokens, enable_prefix_caching)
        self.window = PagePool(sizes.window_pages)
        self.pending = {rate: PagePool(count) for rate, count in sizes.pending_pages.items()}

    # -- what the scheduler reads ----------------------------------------------------------------
    @property
    def block_size(self) -> int:
        """The prefix cache's unit: a compressed page."""
        return self.layout.page_tokens

    @property
    def enable_prefix_caching(self) -> bool:
        return self.entries.enable_prefix_caching

    @property
    def stats(self) -> PrefixCacheStats:
        return self.entries.stats

    @property
    def replayed_tokens(self) -> int:
        """Tokens recomputed before a prefix-cache hit (replay), over the admissions that went through."""
        return self.entries.replayed_tokens

    @property
    def num_blocks(self) -> int:
        return self.entries.num_blocks

    @property
    def num_free_blocks(self) -> int:
        return self.entries.num_free_blocks

    @property
    def capacity_tokens(self) -> int:
        return self.entries.capacity_tokens

    @property
    def usage(self) -> float:
        pools = [self.window, *self.pending.values()]
        return max([self.entries.usage] + [p.num_used / p.num_pages for p in pools if p.num_pages])

    def pages_in_use(self) -> dict[str, int]:
        """Pages referenced by live sequences, per group (compressed pages: also the cached ones in use)."""
        used = {"entries": self.entries.num_blocks - self.entries.num_free_blocks, "window": self.window.num_used}
        used |= {f"pending@{rate}": pool.num_used for rate, pool in self.pending.items()}
        return used

    def new_table(self) -> HybridTable:
        return HybridTable()

    # -- prefix cache ----------------------------------------------------------------------------
    def match_prefix(self, token_ids: list[int]) -> list[int]:
        return self.entries.match_prefix(token_ids)

    def allocate_prefix(self, table: HybridTable, token_ids: list[int], restored: int = 0) -> int:
        """Take the cached compressed pages of the longest cached prefix; returns where computing
        starts: the replay's start before the hit (0 without a hit). A preempted sequence
        (`restored` tokens computed before) is no different: its entries past the cached pages
        are gone with its pages."""
        hit = self.entries.allocate_prefix(table.entries, token_ids)
        start = self.replay_start(hit) if hit else 0
        table.first, table.cached_through = start, hit
        table.entries.replay = hit - start  # counted by the entries' BlockManager once grown
        return start

    def replay_start(self, restored: int) -> int:
        layout = self.layout
        needs = [(b.layer, b.needed_from(restored)) for b in layout.branches]
        return self.replay.start(restored, (layout.sliding_window,) * layout.num_layers, needs)

    def commit(self, table: HybridTable, token_ids: list[int], num_computed: int) -> None:
        """After a step: register full compressed pages, give back token pages no step reads again."""
        self.entries.commit(table.entries, token_ids, num_computed)
        bs = self.layout.block_size
        self.window.release_before(table.window, (num_computed - self.layout.sliding_window + 1) // bs)
        for rate, pool in self.pending.items():
            pool.release_before(table.pending_pages(rate), self.layout.pending_from(rate, num_computed) // bs)

    def clear_cache(self) -> None:
        self.entries.clear_cache()

    # -- KV events: the compressed pages' prefix cache is the one a hit is taken from ----------
    publishes_kv_events = True

    @property
    def events(self):
        return self.entries.events

    def enable_events(self):
        """Publish the compressed pages' prefix-cache changes (kvcache/events.py): a block is a
        compressed page of `block_size` tokens, keyed by the same chain as the full-attention cache."""
        return self.entries.enable_events()

    # -- allocation ------------------------------------------------------------------------------
    def _token_needs(self, table: HybridTable, num_tokens: int) -> list[tuple[PagePool, list[int], int]]:
        pages, first = -(-num_tokens // self.layout.block_size), table.first // self.layout.block_size
        groups = [(self.window, table.window)] + [(pool, table.pending_pages(r)) for r, pool in self.pending.items()]
        return [(pool, pages_of, PagePool.needed(pages_of, pages, first)) for pool, pages_of in groups]

    def can_grow(self, table: HybridTable, num_tokens: int) -> bool:
        entry_tokens = self.layout.entry_tokens(num_tokens)
        if not self.entries.can_grow(table.entries, entry_tokens):
            return False
        return all(needed <= pool.num_free for pool, _, needed in self._token_needs(table, num_tokens))

    def grow(self, table: HybridTable, num_tokens: int) -> bool:
        """Pages for positions < num_tokens in every group; False (nothing taken) if any runs out."""
        if not self.can_grow(table, num_tokens):
            return False
        self.entries.grow(table.entries, self.layout.entry_tokens(num_tokens))
        first = table.first // self.layout.block_size
        for pool, pages_of, _ in self._token_needs(table, num_tokens):
            pool.grow(pages_of, -(-num_tokens // self.layout.block_size), first)
        return True

    def free(self, table: HybridTable) -> None:
        self.entries.free(table.entries)
        self.window.free(table.window)
        for rate, pool in self.pending.items():
            pool.free(table.pending_pages(rate))
        table.first = table.cached_through = 0
