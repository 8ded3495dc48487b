"""WindowedBlockManager: blocks out of every window given back, hits that need only the window's blocks,
restored sequences restarting at the replay's start, and the placeholder block never handed out."""

from __future__ import annotations

from deepinfer.kvcache.replay import ReplayPolicy
from deepinfer.kvcache.windowed import NULL_BLOCK, WindowedBlockManager

TOKENS = list(range(100, 140))


def manager(num_blocks=32, replay=None) -> WindowedBlockManager:
    return WindowedBlockManager(num_blocks, 4, True, (6, 6), replay)  # 2 layers, window 6, blocks of 4


def test_the_placeholder_block_is_never_handed_out():
    blocks = manager(num_blocks=5)
    table = blocks.new_table()
    assert blocks.num_blocks == 4 and blocks.grow(table, 16) and not blocks.can_grow(table, 17)
    assert NULL_BLOCK not in table.block_ids


def test_commit_gives_back_blocks_out_of_the_window():
    blocks = manager()
    table = blocks.new_table()
    blocks.grow(table, 40)
    blocks.commit(table, TOKENS, 40)  # positions >= 35 still attended: blocks 8 and 9
    assert [b != NULL_BLOCK for b in table.block_ids] == [False] * 8 + [True] * 2
    assert len(blocks.evictable) == 8  # registered: still in the prefix cache
    blocks.free(table)
    assert blocks.num_free_blocks == blocks.num_blocks


def test_a_hit_needs_only_the_window_blocks_even_when_the_head_is_evicted():
    blocks = manager()
    table = blocks.new_table()
    blocks.grow(table, 40)
    blocks.commit(table, TOKENS, 40)
    blocks.free(table)
    never_used = len(blocks.never_used)
    assert blocks.grow(blocks.new_table(), (never_used + 3) * 4)  # evicts the 3 oldest cached: the head
    assert len(blocks.evictable) == 7
    again = blocks.new_table()
    assert blocks.allocate_prefix(again, TOKENS[:37]) == 36  # window before 36: positions 31..35
    assert [b != NULL_BLOCK for b in again.block_ids] == [False] * 7 + [True] * 2
    assert len(again.hashes) == 9 and len(blocks.match_prefix(TOKENS[:37])) == 9


def test_a_restored_sequence_restarts_where_the_windows_reach():
    blocks = manager(replay=ReplayPolicy("exact"))
    table = blocks.new_table()
    # nothing cached (a preempted sequence with 30 tokens computed): exact reach 2 * 5 = 10 -> 20
    assert blocks.allocate_prefix(table, TOKENS[:33], restored=30) == 20
    assert table.block_ids == [NULL_BLOCK] * 5 and blocks.replayed_tokens == 0
    assert blocks.grow(table, 33) and blocks.replayed_tokens == 10
    blocks.commit(table, TOKENS[:33], 33)
    assert len(blocks.cached) == 3  # blocks 5..7 registered, the placeholders never
    bounded = manager(replay=ReplayPolicy("bounded", 3))
    assert bounded.allocate_prefix(bounded.new_table(), TOKENS[:33], restored=30) == 24  # 27, from its block
