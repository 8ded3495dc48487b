"""The KV tier: prefix blocks kept outside the device pool, in host memory and on disk.

Every block the prefix cache registers is copied (on the step thread: one small clone) and
written off the step loop by a background thread, to a bounded host-memory LRU and/or files
under a cache directory (bounded, least recently used first out), keyed by a checksummed
content hash of the model's identity and the block's whole token prefix. A prefix-cache miss in
the pool is continued from the tier: blocks found there are copied back into free pool blocks
instead of being recomputed, also by a process started later with the same model; a queued
request's blocks are read from disk ahead of the step that admits it (`prefetch.py`).

Owns the block format (`format.py`, documented in docs/kv_cache.md), the keys (`identity.py`),
the stores (`disk.py`, `host.py`), reading (`prefetch.py`) and the glue with the paged pool (`offload.py`). Knows the
`BlockManager` and `KVPool` of the paged layout only; nothing about models' math, scheduling,
sampling or constraints.
"""

from deepinfer.kvcache.tier.identity import ModelIdentity, block_digests
from deepinfer.kvcache.tier.offload import KVTier, TierConfig

__all__ = ["KVTier", "ModelIdentity", "TierConfig", "block_digests"]
