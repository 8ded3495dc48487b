"""What the hybrid cache stores per token and per compressed entry, read from a model's state layout.

A hybrid model (DeepSeek-V4) attends, in every layer, a sliding window of its own K=V rows, and in
some layers compressed entries: one entry every `rate` tokens, pooled from per-token projections
(kv and gate) once a window of `rate` tokens is complete (overlapping windows: the last complete
window stays needed too). The model describes this as a `StateLayout` (model/deepseek_v4_cache.py);
kvcache reads it by attribute only (it never imports the model) into a `HybridLayout`:

  window rows     per layer, width window_dims[l]; needed back to sliding_window - 1 tokens
  pending rows    per branch, kv and gate of `width`; needed from `Branch.needed_from(length)`
  entries         per branch, entry_dim wide; needed for the whole sequence

Window and pending rows live in token pages of `block_size` tokens (pending rows in one page
group per rate); entries in compressed pages that cover `page_tokens` tokens, a multiple of the
block size and of every rate, so that a compressed page holds whole entries of every branch and
is the prefix cache's unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Branch:
    """One compressed branch of one layer ("compressor" or "indexer")."""

    layer: int
    name: str
    rate: int
    overlap: bool
    entry_dim: int
    width: int  # of the pending kv and gate rows

    def needed_from(self, length: int) -> int:
        """First position whose projections the next entry after `length` tokens still pools."""
        complete = length // self.rate
        return max(0, (complete - 1 if self.overlap else complete) * self.rate)

    @property
    def reach(self) -> int:
        """Most tokens of pending rows the branch holds between entries."""
        return (2 if self.overlap else 1) * self.rate


@dataclass(frozen=True)
class HybridLayout:
    source: Any  # the model's StateLayout: segments hand it back to the model, which checks it
    sliding_window: int
    window_dims: tuple[int, ...]  # per layer
    branches: tuple[Branch, ...]
    block_size: int  # tokens per token page
    page_tokens: int  # tokens per compressed page

    @classmethod
    def of(cls, layout: Any, block_size: int) -> "HybridLayout":
        branches = []
        for index, layer in enumerate(layout.layers):
            for name in ("compressor", "indexer"):
                b = getattr(layer, name)
                if b is not None:
                    branches.append(Branch(index, name, b.rate, b.overlap, b.entry_dim, b.width))
        page = math.lcm(block_size, *(b.rate for b in branches))
        return cls(layout, layout.sliding_window, tuple(layer.window_dim for layer in layout.layers),
                   tuple(branches), block_size, page)

    @property
    def num_layers(self) -> int:
        return len(self.window_dims)

    @property
    def rates(self) -> tuple[int, ...]:
        return tuple(sorted({b.rate for b in self.branches}))

    def branches_of_rate(self, rate: int) -> tuple[Branch, ...]:
        return tuple(b for b in self.branches if b.rate == rate)

    def pending_from(self, rate: int, length: int) -> int:
        """First position of the pending rows of this rate that the state after `length` tokens needs."""
        return min(b.needed_from(length) for b in self.branches_of_rate(rate))

    def entry_tokens(self, num_tokens: int) -> int:
        """Tokens whose entries exist once `num_tokens` tokens are in: the longest run of whole windows."""
        return max((num_tokens // r * r for r in self.rates), default=0)

    # -- bytes, for sizing the pools and for reports ----------------------------------------------
    def window_bytes_per_token(self, element: int) -> int:
        return sum(self.window_dims) * element

    def pending_bytes_per_token(self, rate: int, element: int) -> int:
        return sum(2 * b.width for b in self.branches_of_rate(rate)) * element

    def entry_bytes_per_page(self, element: int) -> int:
        return sum(self.page_tokens // b.rate * b.entry_dim for b in self.branches) * element
