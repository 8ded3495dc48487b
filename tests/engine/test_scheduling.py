"""Continuous batching behaviour: token budget, chunked prefill, prefix-cache hits, preemption
by recomputation, abort freeing blocks at once, and errors confined to their own request."""

import pytest

from deepinfer import SamplingParams
from deepinfer.types import FinishReason

LONG = "the quick brown fox jumps over the lazy dog " * 6


def params(**kw):
    base = dict(temperature=0.8, seed=3, max_tokens=12, ignore_eos=True)
    return SamplingParams(**{**base, **kw})


def record_batches(engine):
    batches, schedule = [], engine.scheduler.schedule

    def spy():
        batch = schedule()
        batches.append([(s.seq.request.request_id, s.num_new) for s in batch])
        return batch

    engine.scheduler.schedule = spy
    return batches


@pytest.mark.parametrize("chunked", [True, False])
def test_budget_and_chunked_prefill_mix_with_decodes(make_llm, chunked):
    llm = make_llm(max_num_batched_tokens=8, block_size=4, chunked_prefill=chunked)
    engine = llm.engine
    batches = record_batches(engine)
    engine.add_request(llm.tokenizer.encode("hi"), params(max_tokens=30), request_id="short")
    engine.step()                                            # prefill of the short prompt
    long_ids = llm.tokenizer.encode(LONG)
    engine.add_request(long_ids, params(max_tokens=3), request_id="long")
    while engine.has_unfinished():
        engine.step()
    long_chunks = [n for batch in batches for rid, n in batch if rid == "long"]
    if chunked:
        assert all(sum(n for _, n in batch) <= 8 for batch in batches)
        assert sum(long_chunks[:-2]) == len(long_ids) and max(long_chunks) == 7
        mixed = [batch for batch in batches if {"short", "long"} <= {rid for rid, _ in batch}]
        assert len(mixed) >= len(long_ids) // 7               # the decode kept going during the prefill
    else:
        assert long_chunks[0] == len(long_ids)                # one oversize prefill, alone in its step
        assert [b for b in batches if ("long", len(long_ids)) in b] == [[("long", len(long_ids))]]
    stats = engine.stats()
    assert stats["num_running"] == 0 and stats["kv_usage"] == 0.0


def test_prefix_cache_hit_skips_prompt_compute_and_keeps_output(make_llm):
    llm = make_llm(block_size=4)
    first = llm.generate(LONG + "A", params())[0]
    second = llm.generate(LONG + "A", params())[0]
    prompt_len = len(first.prompt_token_ids)
    assert first.num_cached_tokens == 0
    assert second.num_cached_tokens == (prompt_len - 1) // 4 * 4 > 0
    assert second.token_ids == first.token_ids
    assert llm.engine.stats()["prefix_cache_hit_rate"] > 0.4


@pytest.mark.parametrize("caching", [True, False])
def test_requests_arriving_together_compute_a_shared_prefix_once(make_llm, caching):
    llm = make_llm(block_size=4, max_num_batched_tokens=512)
    engine = llm.engine
    engine.blocks.enable_prefix_caching = caching
    batches = record_batches(engine)
    prompts = [LONG + tail for tail in ("A", "B b", "C c c")]
    outs = llm.generate(prompts, params())
    ids = [o.prompt_token_ids for o in outs]
    common = next(i for i, (a, b, c) in enumerate(zip(*ids)) if not a == b == c)
    shared_blocks = common // 4 * 4
    if caching:  # the later two wait one step, then read the shared blocks from the cache
        assert batches[0] == [("req-0", len(outs[0].prompt_token_ids))]
        assert [o.num_cached_tokens for o in outs] == [0, shared_blocks, shared_blocks] and shared_blocks > 0
    else:
        assert [rid for rid, _ in batches[0]] == ["req-0", "req-1", "req-2"]
        assert [o.num_cached_tokens for o in outs] == [0, 0, 0]
    alone = [llm.generate(p, params())[0].token_ids for p in prompts]
    assert [o.token_ids for o in outs] == alone


def test_preemption_recomputes_and_gives_identical_outputs(make_llm):
    prompts = [f"number {i}: the lazy dog jumps" for i in range(6)]    # ~5 blocks each + 5 to decode
    roomy = make_llm(num_kv_blocks=512, block_size=4).generate(prompts, params(max_tokens=20))
    for caching in (False, True):
        tight = make_llm(num_kv_blocks=40, block_size=4, enable_prefix_caching=caching)
        outs = tight.generate(prompts, params(max_tokens=20))
        assert tight.engine.scheduler.num_preemptions > 0
        assert [o.token_ids for o in outs] == [o.token_ids for o in roomy]
        assert tight.engine.blocks.num_free_blocks == 40


def test_prompt_larger_than_the_whole_cache_fails_alone(make_llm):
    llm = make_llm(num_kv_blocks=8, block_size=4)
    big, small = llm.generate([LONG * 2, "hi"], params(max_tokens=3))
    assert big.finish_reason == FinishReason.ERROR and "KV cache" in big.outputs[0].error
    assert small.finish_reason == FinishReason.LENGTH and len(small.token_ids) == 3


def test_abort_frees_blocks_at_once(make_llm):
    llm = make_llm(block_size=4, enable_prefix_caching=False)
    engine = llm.engine
    rid = engine.add_request(llm.tokenizer.encode(LONG), params(max_tokens=100))
    keep = engine.add_request(llm.tokenizer.encode("hello"), params(max_tokens=5))
    for _ in range(3):
        engine.step()
    used = engine.blocks.num_blocks - engine.blocks.num_free_blocks
    engine.abort(rid)
    assert engine.blocks.num_blocks - engine.blocks.num_free_blocks < used
    outs = {}
    while engine.has_unfinished():
        for out in engine.step():
            outs.setdefault(out.request_id, []).append(out)
    assert outs[rid][-1].finish_reason == FinishReason.ABORT and outs[rid][-1].finished
    assert outs[keep][-1].finish_reason == FinishReason.LENGTH
    assert engine.blocks.num_free_blocks == engine.blocks.num_blocks


def test_constraint_error_finishes_only_that_request(make_llm):
    llm = make_llm()
    good, bad, other = llm.generate(["a", "b", "c"], [params(regex="[0-9]{3}"), params(regex="(ab"),
                                                      params(max_tokens=4)])
    assert bad.finish_reason == FinishReason.ERROR and "regex" in bad.outputs[0].error
    assert good.finish_reason == FinishReason.STOP and len(good.text) == 3 and good.text.isdigit()
    assert other.finish_reason == FinishReason.LENGTH


def test_duplicate_and_overlong_requests_are_user_errors(make_llm):
    from deepinfer.errors import UserError

    llm = make_llm(max_model_len=16)
    llm.engine.add_request([1, 2], params(), request_id="x")
    with pytest.raises(UserError, match="already in use"):
        llm.engine.add_request([1, 2], params(), request_id="x")
    with pytest.raises(UserError, match="context"):
        llm.engine.add_request(list(range(20)), params())
    out = llm.generate([[5] * 10], params(max_tokens=100))[0]
    assert out.finish_reason == FinishReason.LENGTH and len(out.token_ids) == 6


def test_drafts_take_only_the_budget_known_tokens_left(make_llm):
    """Speculation never shortens a prefill chunk or delays an admission: the long prompt is
    chunked alike with and without drafts, and every token is the plain path's."""
    from deepinfer.engine.speculation.settings import SpeculativeConfig

    runs = {}
    for spec in (False, True):
        llm = make_llm(max_num_batched_tokens=8, block_size=4, speculative=spec,
                       speculative_config=SpeculativeConfig(measured_cost=False, max_rest=0))
        engine = llm.engine
        steps = []
        schedule = engine.scheduler.schedule

        def spy():
            batch = schedule()
            steps.append([(s.seq.request.request_id, s.num_new - s.num_draft, s.num_draft) for s in batch])
            return batch

        engine.scheduler.schedule = spy
        greedy = dict(temperature=0, ignore_eos=True)
        engine.add_request(llm.tokenizer.encode("1 2 3 1 2 3 1 2 3 1 2"), params(max_tokens=40, **greedy),
                           request_id="short")
        for _ in range(6):                                       # the short one decodes, then drafts
            engine.step()
        engine.add_request(llm.tokenizer.encode(LONG), params(max_tokens=3, **greedy), request_id="long")
        outputs = {}
        while engine.has_unfinished():
            for out in engine.step():   # deltas
                outputs.setdefault(out.request_id, []).extend(out.outputs[0].token_ids)
        prefill = [known for batch in steps for rid, known, _ in batch if rid == "long"]
        runs[spec] = (outputs, prefill, engine.stats())
        assert all(sum(k + d for _, k, d in batch) <= 8 for batch in steps)
    assert runs[True][0] == runs[False][0]
    assert runs[True][1][:-3] == runs[False][1][:-3]          # the prompt's chunks (then its decodes)
    assert runs[True][2]["verified_tokens"] > 0
