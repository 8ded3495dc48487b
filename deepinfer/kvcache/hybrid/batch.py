"""One forward pass over the hybrid cache: what a hybrid model (DeepSeek-V4) reads and writes per layer.

`HybridBatch` is the model's cache argument: consecutive runs of new tokens, one `Segment` per
sequence, each with a `SequenceState` that offers, per layer, the interface of the model's dense
state (model/deepseek_v4_cache.py): `window.extend(rows)` writes the new K=V rows into their
token-page slots and returns the rows of positions [end - n_w, end) still in the window;
a branch's `append` writes the new pending projections, `windows` reads complete windows of
them back, `add_entries` writes pooled entries into compressed pages and `entries` reads all of
the sequence's entries. Slot indices are computed once per sequence and forward pass and shared
by its layers. Nothing here changes a table: rows past what the engine keeps (rejected draft
tokens) are simply never read, and the next step writes over them.
"""

from __future__ import annotations

from functools import cached_property

import torch

from deepinfer.kvcache.hybrid.blocks import HybridTable
from deepinfer.kvcache.hybrid.layout import Branch, HybridLayout
from deepinfer.kvcache.hybrid.pages import RELEASED
from deepinfer.kvcache.hybrid.pool import HybridPool


def _slots(pages: list[int], page_size: int, lo: int, hi: int) -> torch.Tensor:
    """Flat slots of positions [lo, hi) in a page table: [hi - lo]."""
    if hi <= lo:
        return torch.empty(0, dtype=torch.long)
    used = pages[lo // page_size:(hi - 1) // page_size + 1]
    if RELEASED in used or len(used) < (hi - 1) // page_size - lo // page_size + 1:
        raise RuntimeError(f"positions {lo}..{hi - 1} are not all in pages the sequence holds")
    positions = torch.arange(lo, hi)
    return torch.tensor(pages, dtype=torch.long)[positions // page_size] * page_size + positions % page_size


class SequenceState:
    """One sequence's view of the pool for one forward pass: tokens [past, end)."""

    def __init__(self, pool: HybridPool, table: HybridTable, past: int, num_new: int) -> None:
        self.pool, self.table, self.past, self.end = pool, table, past, past + num_new
        self.spec: HybridLayout = pool.layout
        self.layout = self.spec.source  # the model's own description: it checks the state is for it
        self.layers = [_LayerState(self, layer) for layer in range(self.spec.num_layers)]

    @property
    def restored(self) -> int:
        """Tokens whose entries exist before this pass (more than `past` while a replay runs)."""
        return max(self.past, self.table.cached_through)

    @cached_property
    def new_slots(self) -> torch.Tensor:
        return _slots(self.table.window, self.spec.block_size, self.past, self.end)

    @cached_property
    def window_first(self) -> int:
        return max(self.table.first, self.past - self.spec.sliding_window + 1, 0)

    @cached_property
    def window_slots(self) -> torch.Tensor:
        return _slots(self.table.window, self.spec.block_size, self.window_first, self.end)

    def pending_first(self, rate: int) -> int:
        needed = max(self.table.first, self.spec.pending_from(rate, self.restored))
        return min(self.past, needed)

    @cached_property
    def pending_slots(self) -> dict[int, torch.Tensor]:
        bs = self.spec.block_size
        return {r: _slots(self.table.pending_pages(r), bs, self.pending_first(r), self.end) for r in self.spec.rates}

    @cached_property
    def entry_slots(self) -> dict[int, torch.Tensor]:
        """Slots of entries [0, entries after this pass) per rate, in compressed pages."""
        page, blocks = self.spec.page_tokens, torch.tensor(self.table.entries.block_ids, dtype=torch.long)
        out = {}
        for rate in self.spec.rates:
            per_page, entries = page // rate, torch.arange(max(self.end, self.table.cached_through) // rate)
            out[rate] = blocks[entries // per_page] * per_page + entries % per_page
        return out


class _LayerState:
    def __init__(self, seq: SequenceState, layer: int) -> None:
        self.window = _Window(seq, layer)
        self.compressor = self.indexer = None
        for index, branch in enumerate(seq.spec.branches):
            if branch.layer == layer:
                setattr(self, branch.name, _Branch(seq, index, branch))


class _Window:
    def __init__(self, seq: SequenceState, layer: int) -> None:
        self.seq, self.rows = seq, seq.pool.window[layer]

    def extend(self, new: torch.Tensor) -> torch.Tensor:
        """Write the new rows [n, D]; returns the window's rows of positions [end - n_w, end)."""
        self.rows.index_copy_(0, self.seq.new_slots, new.to(self.rows.dtype))
        return self.rows.index_select(0, self.seq.window_slots).to(new.dtype)


class _Branch:
    def __init__(self, seq: SequenceState, index: int, branch: Branch) -> None:
        self.seq, self.branch, self.rate = seq, branch, branch.rate
        pool = seq.pool
        self.kv, self.gate, self.entry_rows = pool.pending_kv[index], pool.pending_gate[index], pool.entries[index]
        self.num_entries = seq.restored // branch.rate
        self.pending_end = seq.past
        self.pending_start = seq.pending_first(branch.rate)

    def append(self, kv: torch.Tensor, gate: torch.Tensor) -> None:
        """Projections [n, width] of the pass's new tokens."""
        slots = self.seq.pending_slots[self.rate][self.seq.past - self.pending_start:]
        self.kv.index_copy_(0, slots, kv.to(self.kv.dtype))
        self.gate.index_copy_(0, slots, gate.to(self.gate.dtype))
        self.pending_end = self.seq.end

    def windows(self, first: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Pending projections of windows first..first+count-1: kv, gate [count, rate, width]."""
        lo = first * self.rate - self.pending_start
        if lo < 0 or (first + count) * self.rate > self.pending_end:
            raise ValueError(f"windows {first}..{first + count - 1} are not pending "
                             f"(pending positions {self.pending_start}..{self.pending_end - 1})")
        slots = self.seq.pending_slots[self.rate][lo:lo + count * self.rate]
        width = self.kv.shape[1]
        return (self.kv.index_select(0, slots).view(count, self.rate, width),
                self.gate.index_select(0, slots).view(count, self.rate, width))

    def add_entries(self, new: torch.Tensor) -> None:
        slots = self.seq.entry_slots[self.rate][self.num_entries:self.num_entries + new.shape[0]]
        self.entry_rows.index_copy_(0, slots, new.to(self.entry_rows.dtype))
        self.num_entries += new.shape[0]

    @property
    def entries(self) -> torch.Tensor:
        return self.entry_rows.index_select(0, self.seq.entry_slots[self.rate][:self.num_entries])


class Segment:
    """One sequence's run of new tokens in the packed pass: rows [start, start + num_new)."""

    def __init__(self, cache: SequenceState, start: int, num_new: int) -> None:
        self.cache, self.start, self.num_new = cache, start, num_new

    @property
    def past(self) -> int:
        return self.cache.past


class HybridBatch:
    """parts: (table, tokens already computed, new tokens) per sequence, in packed order."""

    def __init__(self, pool: HybridPool, parts: list[tuple[HybridTable, int, int]]) -> None:
        self.segments, start = [], 0
        for table, past, num_new in parts:
            if num_new > 0:
                self.segments.append(Segment(SequenceState(pool, table, past, num_new), start, num_new))
                start += num_new
        self.num_tokens = start

    def commit(self) -> None:
        """Nothing to do: the tables move on in HybridBlockManager.commit, once the step's tokens are known."""
