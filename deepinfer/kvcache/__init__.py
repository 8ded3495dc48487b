"""Paged KV cache: blocks, block tables, prefix caching with a hash chain.

Owns KV memory and its bookkeeping: per-token K/V pages (`KVPool`), the hybrid pages of
sliding-window + compressed-entry models (`hybrid/`), and where a restored sequence restarts
computing when the cache does not keep its window (`replay.py`), the tier prefix blocks go to
outside the pool, in host memory and on disk (`tier/`); `storage.py` picks the kind a model needs. Knows nothing about models' math beyond the `KVCache` protocol and the state
layout a hybrid model describes, and nothing about sampling or constraints.
"""

from deepinfer.kvcache.block_manager import BlockManager, BlockTable, PrefixCacheStats
from deepinfer.kvcache.paged import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes
from deepinfer.kvcache.replay import ReplayPolicy
from deepinfer.kvcache.tier import KVTier, TierConfig
from deepinfer.kvcache.storage import HybridStorage, PagedStorage, StorageConfig, build_storage

__all__ = ["BlockManager", "BlockTable", "PrefixCacheStats", "HybridStorage", "KVPool", "PagedKVCache",
           "PagedStorage", "ReplayPolicy", "SeqSlice", "StorageConfig", "build_storage", "probe_layer_shapes",
           "KVTier", "TierConfig"]
