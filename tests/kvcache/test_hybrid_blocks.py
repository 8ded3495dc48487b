"""The hybrid cache's bookkeeping without a model: page groups, release out of the window, the prefix
cache of compressed pages, where replay starts, and refusals."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deepinfer.errors import UserError
from deepinfer.kvcache.hybrid import HybridBlockManager, HybridLayout, PoolSizes
from deepinfer.kvcache.replay import ReplayPolicy


def branch(rate, overlap, dim):
    return SimpleNamespace(rate=rate, overlap=overlap, entry_dim=dim, width=2 * dim if overlap else dim)


def layer(compressor=None, indexer=None):
    return SimpleNamespace(window_dim=8, compressor=compressor, indexer=indexer)


# sliding, CSA (rate 4, with its indexer), HCA (rate 8); window 6
LAYOUT = SimpleNamespace(sliding_window=6, layers=(
    layer(), layer(branch(4, True, 8), branch(4, True, 4)), layer(branch(8, False, 8))))


def manager(block_size=4, entry_pages=16, prefix=True, replay=None) -> HybridBlockManager:
    layout = HybridLayout.of(LAYOUT, block_size)
    return HybridBlockManager(layout, PoolSizes(32, {4: 32, 8: 32}, entry_pages), prefix, replay)


def test_layout_pages_hold_whole_entries_of_every_rate():
    layout = HybridLayout.of(LAYOUT, 4)
    assert layout.page_tokens == 8 and layout.rates == (4, 8)
    assert [(b.layer, b.name, b.width) for b in layout.branches] == [(1, "compressor", 16), (1, "indexer", 8),
                                                                      (2, "compressor", 8)]
    assert HybridLayout.of(LAYOUT, 16).page_tokens == 16
    assert layout.entry_bytes_per_page(4) == (2 * 8 + 2 * 4 + 1 * 8) * 4
    assert layout.pending_from(4, 23) == 16 and layout.pending_from(8, 23) == 16  # CSA keeps window 4 too


def test_commit_gives_back_token_pages_out_of_reach_and_keeps_entries():
    blocks = manager()
    table = blocks.new_table()
    tokens = list(range(40))
    assert blocks.grow(table, 40)
    assert blocks.pages_in_use() == {"entries": 5, "window": 10, "pending@4": 10, "pending@8": 10}
    blocks.commit(table, tokens, 40)
    # window: positions >= 35 (page 8, 9); CSA pending: windows 9 (the overlap) and on -> page 9 (36..);
    # HCA pending: positions >= 40 -> nothing yet
    assert [p >= 0 for p in table.window] == [False] * 8 + [True] * 2
    assert [p >= 0 for p in table.pending[4]] == [False] * 9 + [True]
    assert all(p < 0 for p in table.pending[8])
    assert blocks.pages_in_use() == {"entries": 5, "window": 2, "pending@4": 1, "pending@8": 0}
    blocks.free(table)
    assert blocks.pages_in_use() == {"entries": 0, "window": 0, "pending@4": 0, "pending@8": 0}


def test_grow_takes_nothing_when_one_group_runs_out():
    blocks = manager(entry_pages=3)
    table = blocks.new_table()
    assert not blocks.can_grow(table, 32) and not blocks.grow(table, 32)  # 4 compressed pages needed
    assert blocks.pages_in_use() == {"entries": 0, "window": 0, "pending@4": 0, "pending@8": 0}
    assert blocks.grow(table, 24)
    assert blocks.capacity_tokens == 24


@pytest.mark.parametrize("mode, tokens, start", [("bounded", 140, 0), ("bounded", 5, 27), ("bounded", 0, 28),
                                                 ("exact", 0, 17)])
def test_a_prefix_hit_restores_entries_and_replays_from_the_policys_start(mode, tokens, start):
    blocks = manager(replay=ReplayPolicy(mode, tokens))
    tokens_a = list(range(100, 140))
    first = blocks.new_table()
    blocks.grow(first, 40)
    blocks.commit(first, tokens_a, 40)
    blocks.free(first)
    second = blocks.new_table()
    # 33 shared tokens: 4 compressed pages (32 tokens) cached
    computed_from = blocks.allocate_prefix(second, tokens_a[:33] + [1, 2, 3])
    assert second.cached_through == 32 and computed_from == start == second.first
    assert blocks.replayed_tokens == 0  # counted once the admission goes through
    assert blocks.grow(second, 36)
    assert blocks.replayed_tokens == 32 - start
    assert [p >= 0 for p in second.window] == [i >= start // 4 for i in range(9)]


def test_replay_start_formulas():
    # 3 layers, window 6: exact reaches 3 * 5 = 15 back; layer 1's CSA branch pools from 24 on
    exact, bounded, windows = ReplayPolicy("exact"), ReplayPolicy("bounded", 10), (6, 6, 6)
    assert exact.start(40, windows) == 25
    assert exact.start(40, windows, [(1, 32)]) == 25 and exact.start(40, windows, [(2, 30)]) == 20
    assert bounded.start(40, windows, [(1, 32)]) == 30 and bounded.start(40, windows, [(1, 28)]) == 28
    assert exact.start(10, windows) == bounded.start(8, windows) == 0
    assert exact.start(40, (4, 6, 10)) == 40 - 3 - 5 - 9  # windows of their own per layer


def test_bad_replay_options_are_refused_by_name():
    with pytest.raises(UserError, match="swa_replay must be one of bounded, exact"):
        ReplayPolicy("fast")
    with pytest.raises(UserError, match="swa_replay_tokens must be >= 0"):
        ReplayPolicy("bounded", -1)


def test_without_prefix_caching_nothing_is_restored():
    blocks = manager(prefix=False)
    table = blocks.new_table()
    blocks.grow(table, 40)
    blocks.commit(table, list(range(40)), 40)
    blocks.free(table)
    again = blocks.new_table()
    assert blocks.allocate_prefix(again, list(range(40))) == 0 and again.cached_through == 0
