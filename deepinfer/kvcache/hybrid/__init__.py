"""The hybrid KV cache: sliding-window rows and compressed entries in paged storage (DeepSeek-V4).

Owns the layout read from a model's `state_layout()` (layout.py), the token pages and their
release once out of every window (pages.py), the block manager over all page groups with the
prefix cache of compressed pages and replay on a hit (blocks.py), the tensors (pool.py) and the
per-forward views the model reads and writes (batch.py). Knows nothing about requests,
scheduling or the model's math, and never imports the model: it reads the layout by attribute
and offers the model the interface of its dense state.
"""

from deepinfer.kvcache.hybrid.batch import HybridBatch
from deepinfer.kvcache.hybrid.blocks import HybridBlockManager, HybridTable, PoolSizes
from deepinfer.kvcache.hybrid.layout import HybridLayout
from deepinfer.kvcache.hybrid.pool import HybridPool

__all__ = ["HybridBatch", "HybridBlockManager", "HybridLayout", "HybridPool", "HybridTable", "PoolSizes"]
