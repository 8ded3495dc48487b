"""Paged KV cache: blocks, block tables, prefix caching with a hash chain.

Owns KV memory and its bookkeeping; knows nothing about models' math beyond
the `KVCache` protocol, and nothing about sampling or constraints.
"""

from deepinfer.kvcache.block_manager import BlockManager, BlockTable, PrefixCacheStats
from deepinfer.kvcache.paged import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes

__all__ = ["BlockManager", "BlockTable", "PrefixCacheStats", "KVPool", "PagedKVCache", "SeqSlice",
           "probe_layer_shapes"]
