"""The hybrid cache's tensors: window rows and pending rows in token pages, entries in compressed pages.

Per layer, window[l] [window_pages * block_size, D_l]; per branch b (in layout order),
pending_kv[b] and pending_gate[b] [pending_pages[rate] * block_size, width] and
entries[b] [entry_pages * page_tokens / rate, entry_dim]. Slot arithmetic lives in batch.py.
"""

from __future__ import annotations

import torch

from deepinfer.kvcache.hybrid.layout import HybridLayout


class HybridPool:
    def __init__(self, layout: HybridLayout, window_pages: int, pending_pages: dict[int, int], entry_pages: int,
                 dtype: torch.dtype, device: torch.device | str = "cpu") -> None:
        self.layout, self.dtype = layout, dtype
        bs, page = layout.block_size, layout.page_tokens

        def rows(count: int, width: int) -> torch.Tensor:
            return torch.zeros(count, width, dtype=dtype, device=device)

        self.window = [rows(window_pages * bs, d) for d in layout.window_dims]
        self.pending_kv = [rows(pending_pages[b.rate] * bs, b.width) for b in layout.branches]
        self.pending_gate = [rows(pending_pages[b.rate] * bs, b.width) for b in layout.branches]
        self.entries = [rows(entry_pages * page // b.rate, b.entry_dim) for b in layout.branches]

    @property
    def nbytes(self) -> int:
        tensors = self.window + self.pending_kv + self.pending_gate + self.entries
        return sum(t.numel() * t.element_size() for t in tensors)
