"""Data-parallel serving: N engine replicas as Ray actors behind one engine-like front, routed per request.

Owns starting and watching replicas (`replica.py`, `ray_env.py`), the router's view of which
prefix blocks each replica caches, rebuilt from the replicas' KV events (`index.py`), the
routing policies (`policy.py`) and the front the server talks to as it would to one
`AsyncEngine` (`pool.py`). Reaches the engine only through `deepinfer.engine` and the KV events
of `deepinfer.kvcache.events`; knows nothing of HTTP, the server's routes or the model's layers.
Ray is an optional dependency: it is imported when a pool starts, never at import time.
"""

from deepinfer.router.index import PrefixIndex
from deepinfer.router.policy import POLICIES, ReplicaView, choose_replica
from deepinfer.router.pool import ReplicaError, ReplicaPool
from deepinfer.router.ray_env import DistError

__all__ = ["DistError", "POLICIES", "PrefixIndex", "ReplicaError", "ReplicaPool", "ReplicaView", "choose_replica"]
