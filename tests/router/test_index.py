"""The router's prefix index against the block manager it mirrors, and the routing policies (no Ray)."""

from __future__ import annotations

import random

from deepinfer.router.index import PrefixIndex, prompt_keys
from deepinfer.router.policy import ReplicaView, choose_replica
from deepinfer.kvcache.block_manager import BlockManager
from deepinfer.kvcache.events import AllCleared, BlockStored


def run_sequence(manager: BlockManager, ids: list[int]) -> None:
    table = manager.new_table()
    manager.allocate_prefix(table, ids)
    assert manager.grow(table, len(ids))
    manager.commit(table, ids, len(ids))
    manager.free(table)


def test_index_matches_what_the_block_manager_would_reuse_under_eviction():
    """Differential: after random traffic with evictions, the index's matched blocks for a prompt equal
    `BlockManager.match_prefix` on that replica, for every prompt."""
    rng = random.Random(0)
    managers = [BlockManager(num_blocks=12, block_size=4), BlockManager(num_blocks=9, block_size=4)]
    index = PrefixIndex()
    for manager in managers:
        manager.enable_events()
    prefixes = [[rng.randrange(50) for _ in range(12)] for _ in range(4)]
    prompts = [rng.choice(prefixes) + [rng.randrange(50) for _ in range(rng.randrange(1, 9))] for _ in range(60)]
    for step, ids in enumerate(prompts):
        replica = rng.randrange(2)
        run_sequence(managers[replica], ids)
        if step == 40:
            managers[0].clear_cache()
        for r, manager in enumerate(managers):
            index.apply(r, manager.events.drain())
        for probe in prompts[:20]:
            matched = index.matched_blocks(prompt_keys(probe, 4), [0, 1])
            assert matched == {r: len(m.match_prefix(probe)) for r, m in enumerate(managers)}


def test_enabling_events_late_announces_blocks_already_cached():
    manager = BlockManager(num_blocks=8, block_size=2)
    run_sequence(manager, [1, 2, 3, 4, 5])
    events = manager.enable_events().drain()
    assert [e.token_ids for e in events] == [(1, 2), (3, 4)]
    assert events[1].parent_hash == events[0].block_hash and events[0].parent_hash is None


def test_clear_publishes_all_cleared_and_index_forgets():
    manager, index = BlockManager(num_blocks=8, block_size=2), PrefixIndex()
    manager.enable_events()
    run_sequence(manager, [1, 2, 3, 4, 5])
    manager.clear_cache()
    events = manager.events.drain()
    assert isinstance(events[-1], AllCleared) and isinstance(events[0], BlockStored)
    index.apply(0, events)
    assert index.num_blocks(0) == 0 and not index.holders


def test_policies():
    views = [ReplicaView(0, in_flight=2, matched_blocks=5), ReplicaView(1, in_flight=0), ReplicaView(2, in_flight=1)]
    assert [choose_replica("round_robin", views, t) for t in range(4)] == [0, 1, 2, 0]
    assert choose_replica("least_loaded", views, 0) == 1
    assert choose_replica("cache_aware", views, 0) == 0  # longest prefix, load within the threshold
    busy = [ReplicaView(0, in_flight=9, matched_blocks=5), ReplicaView(1, in_flight=0)]
    assert choose_replica("cache_aware", busy, 0, balance_threshold=4) == 1  # out of balance: least loaded
    full = [ReplicaView(0, kv_usage=0.99, matched_blocks=5), ReplicaView(1, kv_usage=0.5)]
    assert choose_replica("cache_aware", full, 0) == 1
    cold = [ReplicaView(0), ReplicaView(1)]  # no cached prefix anywhere: in turn
    assert {choose_replica("cache_aware", cold, t) for t in range(2)} == {0, 1}
