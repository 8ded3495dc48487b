"""Routing policies: which live replica takes a request.

- `round_robin`: each in turn;
- `least_loaded`: fewest requests in flight, then lowest KV usage;
- `cache_aware`: the replica caching the longest prefix of the prompt (from `PrefixIndex`),
  unless the load is out of balance (its in-flight count exceeds the least loaded one's by more
  than `balance_threshold`, or its KV usage is above `kv_usage_limit`), when the least loaded
  takes it; ties go to the least loaded, then in turn. This is the rule SGLang's router and
  vLLM's production stack use: cache affinity first, bounded by load.
"""

from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("cache_aware", "round_robin", "least_loaded")


@dataclass
class ReplicaView:
    """What the router knows of one live replica when it chooses."""

    index: int
    in_flight: int = 0  # requests the router sent that have not finished
    kv_usage: float = 0.0  # from its last polled stats
    matched_blocks: int = 0  # leading prompt blocks it caches (cache_aware only)


def _load(view: ReplicaView) -> tuple[int, float]:
    return (view.in_flight, view.kv_usage)


def choose_replica(policy: str, views: list[ReplicaView], turn: int, balance_threshold: int = 4,
                   kv_usage_limit: float = 0.95) -> int:
    """The chosen replica's index; `turn` is a counter the caller advances per request."""
    if not views:
        raise ValueError("no live replica to choose from")
    if policy == "round_robin":
        return views[turn % len(views)].index
    rotated = views[turn % len(views):] + views[:turn % len(views)]  # full ties: in turn
    least = min(rotated, key=_load)
    if policy == "least_loaded":
        return least.index
    if policy != "cache_aware":
        raise ValueError(f"unknown routing policy {policy!r}; choose one of {', '.join(POLICIES)}")
    usable = [v for v in rotated if v.in_flight - least.in_flight <= balance_threshold
              and v.kv_usage <= kv_usage_limit]
    if not usable:
        return least.index
    best = max(usable, key=lambda v: (v.matched_blocks, -v.in_flight, -v.kv_usage))
    return best.index
