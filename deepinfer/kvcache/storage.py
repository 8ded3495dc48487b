"""The engine's KV storage for one model: the block manager the scheduler asks, and the cache a forward pass takes.

Two kinds, chosen by what the model says about itself:
- `PagedStorage`: every layer keeps K/V per token (`KVPool`, probed from one forward pass), read
  through the `KVCache` protocol (`PagedKVCache`), blocks and prefix cache in `BlockManager`, or
  in `WindowedBlockManager` when every layer attends a sliding window;
- `HybridStorage`: a model with a `state_layout()` (DeepSeek-V4: sliding windows plus compressed
  entries) keeps its rows in the hybrid pages of `hybrid/`, read through `HybridBatch`.
Both take per forward pass the same parts: (block table, tokens computed, new tokens) per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from deepinfer.errors import UserError
from deepinfer.kvcache.block_manager import BlockManager
from deepinfer.kvcache.hybrid.batch import HybridBatch
from deepinfer.kvcache.hybrid.blocks import HybridBlockManager, PoolSizes, token_pages_for
from deepinfer.kvcache.hybrid.layout import HybridLayout
from deepinfer.kvcache.hybrid.pool import HybridPool
from deepinfer.kvcache.paged import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes
from deepinfer.kvcache.replay import DEFAULT_TOKENS, ReplayPolicy
from deepinfer.kvcache.tier import KVTier, TierConfig
from deepinfer.kvcache.windowed import WindowedBlockManager

MIN_BLOCKS = 4


@dataclass
class StorageConfig:
    block_size: int = 16
    num_blocks: int | None = None  # KV blocks; for a hybrid model, compressed pages
    cache_bytes: int = 1 << 30  # when num_blocks is not given
    enable_prefix_caching: bool = True
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 512
    replay_mode: str | None = None  # None: the storage kind's default (hybrid: bounded, paged: exact)
    replay_tokens: int = DEFAULT_TOKENS
    tier: TierConfig | None = None  # the KV tier evicted prefix blocks go to (kvcache/tier/)

    def replay(self, default_mode: str) -> ReplayPolicy:
        return ReplayPolicy(self.replay_mode or default_mode, self.replay_tokens)


class PagedStorage:
    def __init__(self, model: Any, config: StorageConfig) -> None:
        shapes = probe_layer_shapes(model)
        dtype = getattr(model, "dtype", torch.float32)
        num_blocks = config.num_blocks or max(
            MIN_BLOCKS, config.cache_bytes // KVPool.bytes_per_block(shapes, config.block_size, dtype))
        self.pool = KVPool(shapes, num_blocks, config.block_size, dtype)
        windows = tuple(s.window for s in shapes)
        if all(w is not None for w in windows):  # nothing attends past the windows: see windowed.py
            self.blocks = WindowedBlockManager(num_blocks, config.block_size, config.enable_prefix_caching,
                                               windows, config.replay("exact"))
        else:
            self.blocks = BlockManager(num_blocks, config.block_size, config.enable_prefix_caching)
        self.tier = None
        if config.tier is not None and config.tier.enabled:
            if windows and all(w is not None for w in windows):
                raise UserError("kv_tier_dir: the KV tier holds the blocks of full-attention layers; every "
                                "layer of this model attends a sliding window (its blocks leave the pool as "
                                "they leave the window): run it without a KV tier")
            if not config.enable_prefix_caching:
                raise UserError("kv_tier_dir needs the prefix cache (enable_prefix_caching=True)")
            self.tier = self.blocks.tier = KVTier(model, self.pool, shapes, config.block_size, config.tier)

    def forward_cache(self, parts: list[tuple[Any, int, int]], invariant: bool = False) -> PagedKVCache:
        """invariant: attend through the batch-invariant plans (kvcache/paged.py)."""
        slices = [SeqSlice(table.block_ids, past, num_new) for table, past, num_new in parts]
        return PagedKVCache(self.pool, slices, invariant=invariant)


class HybridStorage:
    def __init__(self, model: Any, config: StorageConfig) -> None:
        if config.tier is not None and config.tier.enabled:
            raise UserError("kv_tier_dir: the KV tier does not hold the hybrid KV cache of sliding windows and "
                            "compressed entries (DeepSeek-V4) yet: run this model without a KV tier")
        self.tier = None
        layout = self.layout = HybridLayout.of(model.state_layout(), config.block_size)
        dtype = getattr(model, "dtype", torch.float32)
        element = torch.empty(0, dtype=dtype).element_size()
        window = token_pages_for(layout, config.max_num_seqs, config.max_num_batched_tokens,
                                 layout.sliding_window - 1)
        pending = {r: token_pages_for(layout, config.max_num_seqs, config.max_num_batched_tokens,
                                      max(b.reach for b in layout.branches_of_rate(r))) for r in layout.rates}
        bs = layout.block_size
        token_bytes = bs * (window * layout.window_bytes_per_token(element)
                            + sum(n * layout.pending_bytes_per_token(r, element) for r, n in pending.items()))
        entry_pages = config.num_blocks or max(
            MIN_BLOCKS, (config.cache_bytes - token_bytes) // max(1, layout.entry_bytes_per_page(element)))
        self.sizes = PoolSizes(window, pending, entry_pages)
        self.pool = HybridPool(layout, window, pending, entry_pages, dtype, getattr(model, "device", "cpu"))
        self.blocks = HybridBlockManager(layout, self.sizes, config.enable_prefix_caching, config.replay("bounded"))

    def forward_cache(self, parts: list[tuple[Any, int, int]], invariant: bool = False) -> HybridBatch:
        """(The model's own attention reads the batch: no batch-invariant plan to choose.)"""
        return HybridBatch(self.pool, parts)


def build_storage(model: Any, config: StorageConfig) -> PagedStorage | HybridStorage:
    if hasattr(model, "state_layout"):
        return HybridStorage(model, config)
    return PagedStorage(model, config)
