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
