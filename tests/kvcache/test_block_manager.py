from deepinfer.kvcache import BlockManager, BlockTable


def test_grow_and_free_return_blocks():
    bm = BlockManager(num_blocks=4, block_size=4)
    t = BlockTable()
    assert bm.grow(t, 9) and len(t.block_ids) == 3
    assert bm.num_free_blocks == 1
    assert not bm.grow(t, 17)             # needs 2 more, only 1 free: nothing taken
    assert len(t.block_ids) == 3 and bm.num_free_blocks == 1
    bm.free(t)
    assert bm.num_free_blocks == 4 and bm.usage == 0.0


def test_prefix_blocks_are_shared_and_refcounted():
    bm = BlockManager(num_blocks=8, block_size=4)
    tokens = list(range(10))
    a = BlockTable()
    assert bm.allocate_prefix(a, tokens) == 0
    bm.grow(a, len(tokens))
    bm.commit(a, tokens, num_computed=10)      # two full blocks registered
    b = BlockTable()
    assert bm.allocate_prefix(b, tokens[:9] + [99, 98]) == 8
    assert b.block_ids == a.block_ids[:2]
    assert bm.ref_counts[a.block_ids[0]] == 2
    assert bm.stats.hit_tokens == 8 and bm.stats.queried_tokens == 21
    # a different first block breaks the chain even if the second block's tokens match
    c = BlockTable()
    assert bm.allocate_prefix(c, [7, 1, 2, 3] + tokens[4:]) == 0


def test_whole_prompt_hit_leaves_last_token_to_compute():
    bm = BlockManager(num_blocks=8, block_size=4)
    tokens = list(range(8))
    a = BlockTable()
    bm.allocate_prefix(a, tokens)
    bm.grow(a, 8)
    bm.commit(a, tokens, 8)
    b = BlockTable()
    assert bm.allocate_prefix(b, tokens) == 4


def test_unreferenced_cached_blocks_survive_until_lru_eviction():
    bm = BlockManager(num_blocks=4, block_size=2)
    first, second = [1, 2, 3], [5, 6, 7]
    for tokens in (first, second):
        t = BlockTable()
        bm.allocate_prefix(t, tokens)
        bm.grow(t, 3)
        bm.commit(t, tokens, 3)
        bm.free(t)
    assert bm.num_free_blocks == 4
    # both prefixes still cached
    assert len(bm.match_prefix(first)) == 1 and len(bm.match_prefix(second)) == 1
    # allocating 3 blocks uses the 2 never-used ones, then evicts the least recently released
    t = BlockTable()
    assert bm.grow(t, 6)
    assert bm.match_prefix(first) == [] and len(bm.match_prefix(second)) == 1


def test_cached_block_taken_again_is_not_evictable():
    bm = BlockManager(num_blocks=2, block_size=2)
    tokens = [1, 2, 3]
    t = BlockTable()
    bm.allocate_prefix(t, tokens)
    bm.grow(t, 3)
    bm.commit(t, tokens, 3)
    bm.free(t)
    u = BlockTable()
    assert bm.allocate_prefix(u, tokens) == 2
    assert bm.grow(u, 4)                       # takes the other block
    assert bm.num_free_blocks == 0
    assert not bm.grow(BlockTable(), 1)


def test_prefix_caching_off():
    bm = BlockManager(num_blocks=4, block_size=2, enable_prefix_caching=False)
    t = BlockTable()
    bm.grow(t, 4)
    bm.commit(t, [1, 2, 3, 4], 4)
    assert bm.match_prefix([1, 2, 3, 4, 5]) == []


def test_clear_cache_forgets_released_blocks_only():
    bm = BlockManager(8, 4)
    held, released = BlockTable(), BlockTable()
    tokens = list(range(9))
    for table in (held, released):
        assert bm.grow(table, 9)
    bm.commit(held, tokens, 9)
    bm.commit(released, [t + 100 for t in tokens], 9)
    bm.free(released)
    bm.clear_cache()
    assert len(bm.match_prefix(tokens + [99])) == 2          # still held: still cached
    assert bm.match_prefix([t + 100 for t in tokens] + [99]) == []
    assert bm.num_free_blocks == 8 - 3
