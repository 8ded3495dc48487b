"""Sliding-window models (every layer slides: Mistral-style) on the windowed block manager: blocks out of
every window are given back while a request runs, a prefix hit takes only the window's blocks, and a
preempted request recomputes only as far back as the windows compound (exact replay, the default):
the same tokens as without preemption."""

from __future__ import annotations

from deepinfer import SamplingParams
from deepinfer.engine import merge
from deepinfer.kvcache.windowed import NULL_BLOCK

GREEDY = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
LONG = [[(7 * i + 3) % 380 + 3 for i in range(90)], [(5 * i + 1) % 380 + 3 for i in range(70)],
        [(11 * i + 7) % 380 + 3 for i in range(80)]]


def held(table) -> int:
    return sum(b != NULL_BLOCK for b in table.block_ids)


def test_running_requests_hold_only_their_windows_blocks(make_llm):
    llm = make_llm("mistral-sliding", block_size=4, max_num_batched_tokens=16, enable_prefix_caching=False)
    engine = llm.engine
    engine.add_request(LONG[0], GREEDY)
    most = 0
    while engine.has_unfinished():
        engine.step()
        for seq in engine.scheduler.running:
            most = max(most, held(seq.table))
    # window 6 and 16 new tokens a step: at most the 2 blocks the window spans + the step's 4 (+1 straddling)
    assert most <= 7 < -(-114 // 4)
    assert engine.blocks.num_free_blocks == engine.blocks.num_blocks


def test_a_prefix_hit_takes_only_the_blocks_of_the_window(make_llm):
    llm = make_llm("mistral-sliding", block_size=4)
    llm.generate(LONG[0] + [5, 6], GREEDY)
    engine, prompt = llm.engine, LONG[0] + [9, 9, 9]
    request = engine.add_request(prompt, GREEDY)
    result = None
    for delta in engine.step():
        result = merge(result, delta)
    seq = engine.requests[request].sequences[0]
    assert seq.num_cached_prompt == 88 and held(seq.table) <= 2 + 2  # the window's 2 blocks, then new ones
    while engine.has_unfinished():
        for delta in engine.step():
            result = merge(result, delta)
    cold = make_llm("mistral-sliding", block_size=4, enable_prefix_caching=False)
    assert result.token_ids == cold.generate(prompt, GREEDY)[0].token_ids


def test_preempted_requests_replay_only_what_the_windows_reach(make_llm):
    params = SamplingParams(temperature=0.7, seed=3, max_tokens=40, ignore_eos=True)
    alone = [make_llm("mistral-sliding", block_size=4).generate(p, params)[0].token_ids for p in LONG]
    llm = make_llm("mistral-sliding", block_size=4, num_kv_blocks=9, max_num_batched_tokens=16,
                   enable_prefix_caching=False)
    outs = llm.generate(LONG, params)
    stats = llm.engine.stats()
    assert stats["num_preemptions"] > 0
    # 2 layers, window 6: a preempted request recomputes the 2 * 5 tokens before where it was
    # (from a block boundary), not its whole history
    assert 0 < stats["swa_replayed_tokens"] <= stats["num_preemptions"] * (10 + 3)
    assert [o.token_ids for o in outs] == alone


def test_bounded_replay_recomputes_fewer_tokens_than_the_windows_compound(make_llm):
    """swa_replay="bounded" on a sliding-window model: a preempted request restarts
    swa_replay_tokens before where it was (from a block boundary), not as far as exact replay."""
    params = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
    options = dict(block_size=4, num_kv_blocks=9, max_num_batched_tokens=16, enable_prefix_caching=False)
    exact = make_llm("mistral-sliding", **options)
    exact.generate(LONG, params)
    bounded = make_llm("mistral-sliding", swa_replay="bounded", swa_replay_tokens=2, **options)
    outs = bounded.generate(LONG, params)
    assert bounded.engine.blocks.replay.mode == "bounded" and exact.engine.blocks.replay.mode == "exact"
    spent = bounded.engine.stats()
    assert spent["num_preemptions"] > 0
    assert 0 < spent["swa_replayed_tokens"] <= spent["num_preemptions"] * (2 + 3)
    assert spent["swa_replayed_tokens"] / spent["num_preemptions"] < (
        exact.engine.stats()["swa_replayed_tokens"] / exact.engine.stats()["num_preemptions"])
    assert all(len(o.token_ids) == 40 for o in outs)


def test_qwen2_sliding_layers_take_the_windowed_cache_and_replay_exactly(make_llm):
    """A Qwen2 config whose layers all slide (use_sliding_window, max_window_layers=0): the windowed
    block manager, exact replay by default; preempted and prefix-hit requests equal a cold run."""
    params = SamplingParams(temperature=0.7, seed=9, max_tokens=30, ignore_eos=True)
    alone = [make_llm("qwen2-sliding", block_size=4, enable_prefix_caching=False).generate(p, params)[0].token_ids
             for p in LONG]
    llm = make_llm("qwen2-sliding", block_size=4, num_kv_blocks=9, max_num_batched_tokens=16,
                   enable_prefix_caching=False)
    assert llm.engine.blocks.windows == (5, 5) and llm.engine.blocks.replay.mode == "exact"
    outs = llm.generate(LONG, params)
    assert llm.engine.stats()["num_preemptions"] > 0 and llm.engine.stats()["swa_replayed_tokens"] > 0
    assert [o.token_ids for o in outs] == alone
    cached = make_llm("qwen2-sliding", block_size=4)
    cached.generate(LONG[0][:60] + [7, 7], params)
    again = cached.generate(LONG[0], params)[0]  # a prefix-cache hit: only the window's blocks taken
    assert cached.engine.stats()["prefix_cache_hit_tokens"] >= 56
    assert again.token_ids == alone[0]


def test_a_sliding_window_cache_publishes_the_chain_a_router_indexes(make_llm):
    """Its events are the full-attention cache's: the same chain keys for the same tokens, each
    block stored once with its parent, and the evicted ones removed."""
    from deepinfer.router.index import PrefixIndex, prompt_keys

    # speculation off: its forward-pass probes borrow free blocks, evicting cached ones
    sliding = make_llm("mistral-sliding", block_size=4, num_kv_blocks=40, speculative=False).engine
    full = make_llm("llama", block_size=4).engine
    assert sliding.enable_kv_events() is True and full.enable_kv_events() is True
    for engine in (sliding, full):
        engine.add_request(LONG[0], GREEDY)
        while engine.has_unfinished():
            engine.step()
    window_events, full_events = sliding.drain_kv_events(), full.drain_kv_events()
    stored = [e for e in window_events if type(e).__name__ == "BlockStored"]
    full_stored = [e for e in full_events if type(e).__name__ == "BlockStored"]
    prompt_blocks = len(LONG[0]) // 4
    assert [e.block_hash for e in stored[:prompt_blocks]] == [e.block_hash for e in full_stored[:prompt_blocks]]
    assert stored[0].parent_hash is None and all(a.block_hash == b.parent_hash for a, b in zip(stored, stored[1:]))
    index = PrefixIndex()
    index.apply(0, window_events)
    keys = prompt_keys(LONG[0], 4)
    assert index.matched_blocks(keys, [0])[0] == len(keys)   # the router would send it back here
    sliding.add_request(LONG[1], GREEDY)   # a second long request evicts the first one's oldest blocks
    while sliding.has_unfinished():
        sliding.step()
    later = sliding.drain_kv_events()
    removed = {e.block_hash for e in later if type(e).__name__ == "BlockRemoved"}
    first = {e.block_hash for e in stored}
    assert removed & first   # what it evicted of the first request is announced
    assert removed <= first | {e.block_hash for e in later if type(e).__name__ == "BlockStored"}


def test_kv_events_of_the_full_attention_cache(make_llm):
    full = make_llm("llama", block_size=4).engine
    assert full.enable_kv_events() is True
    full.add_request(LONG[0], GREEDY)
    while full.has_unfinished():
        full.step()
    stored = [e for e in full.drain_kv_events() if type(e).__name__ == "BlockStored"]
    assert stored and stored[0].parent_hash is None
