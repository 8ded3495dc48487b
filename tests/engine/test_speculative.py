"""Speculative decoding (n-gram drafts, sampled-verify): outputs equal the non-speculative ones,
token for token, in batch-invariant mode (the fixture's default), for greedy and seeded sampling,
constraints, penalties, logprobs, stops and max_tokens; rejected drafts never reach outputs or the
prefix cache. The tiny random models fall into loops, which the n-gram drafts predict."""

import json
import random
import re

import jsonschema
import pytest

from deepinfer import SamplingParams
from deepinfer.constraints import Matcher
from deepinfer.engine.speculation.drafts import Draft, SOURCE_OWN
from deepinfer.engine.speculation.speculative import SpeculativeConfig
from deepinfer.types import FinishReason

@pytest.fixture
def make_llm(make_llm):
    """The engine fixture with plans free of timing: without a speculative_config, the verify
    decision uses the prior step cost (measured_cost=False), so whether a draft is verified
    depends on the requests alone and the tests' "drafts were accepted" checks cannot flake
    with the machine's load; and no sequence rests (max_rest=0: every step plans), so drafts the
    model rejects keep being verified. Outputs do not depend on either."""
    def make(*args, **options):
        if options.get("speculative"):
            options.setdefault("speculative_config", SpeculativeConfig(measured_cost=False, max_rest=0))
        return make_llm(*args, **options)

    return make


PROMPTS = ["hello hello hello hello", "abc abc abc", "the fox jumps over the fox", "x", "1 2 3 1 2 3 1 2"]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                           "tags": {"type": "array", "items": {"enum": ["ab", "cd"]}, "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": False}


def outputs(outs):
    return [[(c.text, c.token_ids, c.finish_reason, None if c.logprobs is None else
              [(lp.token_id, lp.logprob, lp.top) for lp in c.logprobs]) for c in o.outputs] for o in outs]


def both(make_llm, prompts, params, family="llama", **options):
    """(plain outputs, speculative outputs, speculative engine stats)."""
    plain = make_llm(family, speculative=False, **options).generate(prompts, params)
    llm = make_llm(family, speculative=True, **options)
    spec = llm.generate(prompts, params)
    return outputs(plain), outputs(spec), llm.engine.stats()


@pytest.mark.parametrize("family", ["llama", "qwen3", "deepseek"])
def test_greedy_outputs_identical_with_fewer_steps(make_llm, family):
    params = SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)
    plain_llm = make_llm(family, speculative=False)
    plain = outputs(plain_llm.generate(PROMPTS, params))
    llm = make_llm(family, speculative=True)
    assert outputs(llm.generate(PROMPTS, params)) == plain
    stats = llm.engine.stats()
    assert stats["accepted_tokens"] > 0 and stats["verified_tokens"] > stats["accepted_tokens"]
    # the slowest sequence sets the number of steps; it may have found no useful drafts
    assert stats["steps"] <= plain_llm.engine.stats()["steps"] - (family != "deepseek")


def test_seeded_sampling_penalties_and_logprobs_identical(make_llm):
    params = [SamplingParams(temperature=0.8, seed=i, max_tokens=40, ignore_eos=True, logprobs=2 if i % 2 else None,
                             repetition_penalty=1.1 if i == 1 else 1.0, frequency_penalty=0.5 if i == 2 else 0.0,
                             presence_penalty=0.3 if i == 3 else 0.0, min_tokens=20 if i == 4 else 0, n=1 + (i == 0))
              for i in range(5)]
    plain, spec, stats = both(make_llm, PROMPTS, params)
    assert spec == plain
    assert stats["verified_tokens"] > 0


def test_constrained_outputs_identical_and_accepted(make_llm):
    pattern = r"(ab|cd|ef){2,9}( [a-z]{1,6}){0,3}"
    prompts = ["json: ab ab ab", "name: abab", "regex: cdcdcd", "x"]
    for jump in (True, False):
        params = [SamplingParams(json_schema=SCHEMA, temperature=0, max_tokens=80),
                  SamplingParams(json_schema=SCHEMA, temperature=0.8, seed=3, max_tokens=80),
                  SamplingParams(regex=pattern, temperature=0, max_tokens=40),
                  SamplingParams(regex=pattern, temperature=0.9, seed=5, max_tokens=40)]
        llm = make_llm(speculative=True, jump_forward=jump)
        spec = llm.generate(prompts, params)
        plain = make_llm(jump_forward=jump, speculative=False).generate(prompts, params)
        assert outputs(spec) == outputs(plain)
        compiled = llm.engine.compiler.compile_json_schema(SCHEMA)
        for out in spec[:2]:
            matcher = Matcher(compiled)
            assert all(matcher.accept_token(t) for t in out.token_ids)
            if out.finish_reason == FinishReason.STOP:
                jsonschema.validate(json.loads(out.text), SCHEMA)
        for out in spec[2:]:
            assert out.finish_reason != FinishReason.STOP or re.fullmatch(pattern, out.text), out.text


def test_adversarial_drafts_never_leak(make_llm, monkeypatch):
    """Random drafts, all verified: nearly every one is rejected, the outputs must not change."""
    rng = random.Random(0)
    llm = make_llm(speculative=True, speculative_config=SpeculativeConfig(measured_cost=False, max_rest=0,
                                                                          prior_overhead_rows=1e6))
    spec = llm.engine.speculator
    proposer = spec.proposer
    random_draft = lambda limit: Draft([rng.randrange(3, 380) for _ in range(min(limit, 5))], SOURCE_OWN, 1)  # noqa: E731
    monkeypatch.setattr(spec.candidates, "proposals", lambda key, seq, limit: [random_draft(limit)] if limit > 0 else [])
    monkeypatch.setattr(proposer, "continue_text", lambda key, text, limit: random_draft(limit) if limit > 0 else None)
    # every draft source random: the forced lead's continuation too
    monkeypatch.setattr(proposer, "after_text", lambda key, lead, text, limit: Draft(
        (lead + [rng.randrange(3, 380) for _ in range(5)])[:limit], SOURCE_OWN, 1))
    params = [SamplingParams(temperature=0, max_tokens=30, ignore_eos=True),
              SamplingParams(temperature=1.0, seed=9, max_tokens=30, ignore_eos=True, logprobs=1),
              SamplingParams(json_schema=SCHEMA, temperature=0.7, seed=2, max_tokens=60)]
    prompts = PROMPTS[:3]
    spec = llm.generate(prompts, params)
    assert outputs(spec) == outputs(make_llm(speculative=False).generate(prompts, params))
    stats = llm.engine.stats()
    assert stats["verified_tokens"] > 100 and stats["accepted_tokens"] < stats["verified_tokens"] / 4


def test_stops_and_max_tokens_inside_a_draft(make_llm):
    """Loops make long accepted drafts: limits must cut exactly where the plain path cuts."""
    plain = make_llm(speculative=False)
    base = outputs(plain.generate(PROMPTS[:2], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)))
    text = base[0][0][0]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (1, 2, 3, 7, 13, 29)]
    params += [SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, stop=[text[k:k + 3]])
               for k in (5, 17, 30)]
    params += [SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, stop=[text[20:23]],
                              include_stop_str_in_output=True),
               SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, stop_token_ids=[base[0][0][1][25]])]
    prompts = [PROMPTS[0]] * len(params)
    plain, spec, stats = both(make_llm, prompts, params)
    assert spec == plain and stats["accepted_tokens"] > 0
    assert [len(o[0][1]) for o in spec[:6]] == [1, 2, 3, 7, 13, 29]


def test_prefix_cache_stays_consistent_after_speculation(make_llm):
    """A request reusing blocks computed during speculative decoding gets a fresh engine's output."""
    llm = make_llm(speculative=True, block_size=4)
    first = llm.generate(PROMPTS[:3], SamplingParams(temperature=0, max_tokens=45, ignore_eos=True))
    assert llm.engine.stats()["verified_tokens"] > llm.engine.stats()["accepted_tokens"] > 0
    follow = [list(o.prompt_token_ids) + o.token_ids[:37] for o in first]
    params = SamplingParams(temperature=0.7, seed=4, max_tokens=20, ignore_eos=True)
    hits = llm.engine.blocks.stats.hit_tokens
    again = llm.generate(follow, params)
    assert llm.engine.blocks.stats.hit_tokens - hits >= 3 * 40  # the output blocks came from the cache
    fresh = make_llm(enable_prefix_caching=False, block_size=4, speculative=False).generate(follow, params)
    assert outputs(again) == outputs(fresh)


def test_batch_invariant_needle_alone_or_in_a_batch(make_llm):
    needle = SamplingParams(temperature=0.9, seed=77, max_tokens=30, ignore_eos=True, logprobs=1)
    alone = outputs(make_llm(speculative=False).generate([PROMPTS[1]], needle))[0]
    rng = random.Random(5)
    for others in (3, 9):
        prompts = [" ".join(rng.choice(["abc", "fox", "1", "2"]) for _ in range(rng.randint(1, 12)))
                   for _ in range(others)]
        params = [SamplingParams(temperature=rng.choice([0, 0.8]), seed=i, max_tokens=rng.randint(5, 40),
                                 ignore_eos=True) for i in range(others)]
        at = rng.randint(0, others)
        prompts.insert(at, PROMPTS[1])
        params.insert(at, needle)
        llm = make_llm(speculative=True, max_num_batched_tokens=64)
        assert outputs(llm.generate(prompts, params))[at] == alone
        assert llm.engine.stats()["accepted_tokens"] > 0



def test_forced_text_left_to_the_sampler_opens_the_draft(make_llm):
    """Text the constraint forces but jump-forward left (or could not encode) leads the draft."""
    from types import SimpleNamespace

    from deepinfer.engine.speculation.jump_forward import ForcedText
    llm = make_llm(speculative=True)
    engine, spec = llm.engine, llm.engine.speculator
    compiled = engine.compiler.compile_regex("hello (world|there)")
    seq = SimpleNamespace(matcher=Matcher(compiled), finished=False, params=SamplingParams())
    ids, text = spec._forced_lead(seq, ForcedText(engine.tokenizer))
    assert text == "hello " and engine.tokenizer.decode(ids) == "hello "
    assert all(seq.matcher.accept_token(t) for t in ids) and seq.matcher.find_jump_forward_string() == ""
    assert spec._forced_lead(seq, ForcedText(engine.tokenizer)) is None     # nothing forced now
    seq.matcher.reset()
    assert spec._forced_lead(seq, None) is None                            # jump-forward off
    spec.config.forced_lead = False
    assert spec._forced_lead(seq, ForcedText(engine.tokenizer)) is None


def test_a_draft_goes_on_past_forced_text_it_diverged_from(make_llm, monkeypatch):
    """A draft that drafted other text where the constraint now forces some (`"age` where `"city`
    is forced) keeps the forced tokens and continues from the text drafted so far, instead of
    stopping there; a draft walked without a sequence key stops at the forced tokens as before."""
    from types import SimpleNamespace

    from deepinfer.engine.speculation.jump_forward import ForcedText, forced_tokens
    llm = make_llm(speculative=True)
    engine, spec, tok = llm.engine, llm.engine.speculator, llm.engine.tokenizer
    compiled = engine.compiler.compile_regex("(a|b) is forced here(x|y)+")
    seq = SimpleNamespace(matcher=Matcher(compiled), finished=False, params=SamplingParams(temperature=0))
    forced = ForcedText(tok)
    first = tok.encode("a")
    assert all(seq.matcher.accept_token(t) for t in first)
    forced_ids = forced_tokens(seq, forced)
    seq.matcher.rollback(len(first) + len(forced_ids))
    assert tok.decode(forced_ids) and "is forced" in tok.decode(forced_ids)
    seen = []

    def continue_text(key, text, limit):
        seen.append(text)
        return Draft(tok.encode("xyx")[:limit], SOURCE_OWN, 1)
    monkeypatch.setattr(spec.proposer, "continue_text", continue_text)
    wrong = first + tok.encode(" was not")                     # diverges from the forced text
    keep, keys = _walk_whole(spec, seq, Draft(wrong, SOURCE_OWN, 1), forced, key="k", limit=20)
    assert keep[:len(first) + len(forced_ids)] == first + forced_ids
    assert tok.decode(keep).startswith("a is forced herexyx")   # continued, again when the chunk ran out
    assert sum(k is not None for k in keys) == spec.config.max_draft
    assert keys[len(first):len(first) + len(forced_ids)] == [None] * len(forced_ids)
    assert seen and seen[0] == tok.decode(first + forced_ids)
    for limit in (1, 2, 3):                                    # never past max_tokens / the context
        assert _walk_whole(spec, seq, Draft(wrong, SOURCE_OWN, 1), forced, key="k", limit=limit)[0] == \
            (first + forced_ids)[:limit]
    assert seq.matcher.accept_token(first[0])                  # the walk rolled the matcher back
    seq.matcher.rollback(1)
    keep, _ = _walk_whole(spec, seq, Draft(wrong, SOURCE_OWN, 1), forced)   # no key: stops at the forced text
    assert tok.decode(keep).startswith("a") and not tok.decode(keep).endswith("xyx")


def _walk_whole(spec, seq, draft, forced, key=None, limit=0):
    """A draft walked to its end (what a plan that admits everything walks): (tokens, keys)."""
    from deepinfer.engine.speculation.draft_walk import DraftWalk
    walk = DraftWalk(spec, seq, draft, forced, key, limit)
    try:
        while walk.step():
            pass
    finally:
        walk.close()
    return walk.keep, walk.keys


def _drafts_per_step(llm, monkeypatch):
    """Run the constrained batch, recording every plan's drafts."""
    from deepinfer.engine.speculation.speculative import Speculator
    plans, plan = [], Speculator.plan

    def recording(self, running, *args, **kwargs):
        plan(self, running, *args, **kwargs)
        plans.append([list(s.draft) for s in running])
    monkeypatch.setattr(Speculator, "plan", recording)
    pattern = r"(ab|cd|ef){2,9}( [a-z]{1,6}){0,3}"
    params = [SamplingParams(json_schema=SCHEMA, temperature=0, max_tokens=80),
              SamplingParams(json_schema=SCHEMA, temperature=0.8, seed=3, max_tokens=80),
              SamplingParams(regex=pattern, temperature=0, max_tokens=40)] * 2
    # compiled before: every request is admitted in the first step whatever the compile time
    llm.engine.compiler.compile_json_schema(SCHEMA)
    llm.engine.compiler.compile_regex(pattern)
    outs = llm.generate(["json: ab ab ab", "name: abab", "regex: cdcdcd", "x", "ab ab", "cd"], params)
    monkeypatch.setattr(Speculator, "plan", plan)
    return outputs(outs), plans, llm.engine.stats()


def test_lazy_walks_and_remembered_forced_text_change_nothing(make_llm, monkeypatch):
    """Plans walk drafts only as far as the selection asks, and jump-forward reuses the forced
    tokens a walk computed at the same matcher state: both must give exactly the plans, drafts
    and outputs of walking every draft to its end and asking the constraint every time."""
    from deepinfer.engine.speculation.jump_forward import ForcedText
    config = SpeculativeConfig(prior_overhead_rows=40.0, measured_cost=False)   # plans free of timing
    fast = _drafts_per_step(make_llm(speculative=True, speculative_config=config), monkeypatch)
    import deepinfer.engine.speculation.speculative as speculative

    class Whole(speculative.WalkSurvival):
        def __init__(self, walk, confidence):
            while walk.step():
                pass
            super().__init__(walk, confidence)
    monkeypatch.setattr(speculative, "WalkSurvival", Whole)
    monkeypatch.setattr(ForcedText, "state_key", staticmethod(lambda seq, drafted=(): None))
    slow = _drafts_per_step(make_llm(speculative=True, speculative_config=config), monkeypatch)
    assert fast[0] == slow[0] and fast[1] == slow[1]
    assert fast[2]["draft_tokens"] == slow[2]["draft_tokens"] > 20
    assert fast[2]["jump_forward_tokens"] == slow[2]["jump_forward_tokens"] > 0


def test_remembered_forced_tokens_are_keyed_by_the_exact_matcher_state(make_llm):
    from types import SimpleNamespace

    from deepinfer.engine.speculation.jump_forward import ForcedText, forced_tokens
    llm = make_llm(speculative=True)
    tok = llm.engine.tokenizer
    compiled = llm.engine.compiler.compile_regex("(a|b) is forced here(x|y)+")
    seq = SimpleNamespace(matcher=Matcher(compiled), finished=False, params=SamplingParams(temperature=0),
                          output_token_ids=[])
    forced = ForcedText(tok)
    first = tok.encode("a")
    assert all(seq.matcher.accept_token(t) for t in first)
    computed = forced_tokens(seq, forced, first)              # walked: the draft `a` after the output
    assert computed and "is forced" in tok.decode(computed)
    seq.matcher.rollback(len(computed))
    again = forced_tokens(seq, forced, first)                 # remembered: accepted again, same tokens
    assert again == computed and seq.matcher.num_accepted == len(first) + len(computed)
    seq.matcher.rollback(len(again))
    seq.output_token_ids = list(first)                        # the same state reached as output
    assert forced.lookup(seq).accepted == computed
    assert forced.state_key(seq, [5]) is None                 # the matcher did not accept a 6th... token
    seq.matcher.reset()                                       # a matcher out of step with the output
    assert forced.state_key(seq) is None and forced.token_ids(seq) == []
    forced.new_step()
    forced.new_step()                                         # two steps later the entry is gone
    seq.matcher.accept_token(first[0])
    assert forced._find(forced.state_key(seq)) is None


def test_a_walk_looks_up_forced_text_only_when_asked_past_a_token(make_llm, monkeypatch):
    from types import SimpleNamespace

    import deepinfer.engine.speculation.draft_walk as draft_walk
    from deepinfer.engine.speculation.jump_forward import ForcedText
    llm = make_llm(speculative=True)
    spec, tok = llm.engine.speculator, llm.engine.tokenizer
    compiled = llm.engine.compiler.compile_regex("(a|b) is forced here(x|y)+")
    seq = SimpleNamespace(matcher=Matcher(compiled), finished=False, params=SamplingParams(temperature=0),
                          output_token_ids=[])
    calls = []
    real = draft_walk.forced_tokens
    monkeypatch.setattr(draft_walk, "forced_tokens", lambda *a: calls.append(1) or real(*a))
    first = tok.encode("a")
    walk = draft_walk.DraftWalk(spec, seq, Draft(first + tok.encode(" is"), SOURCE_OWN, 1), ForcedText(tok),
                                limit=20)
    for _ in first:
        assert walk.step()
    assert walk.keep == first and not calls                    # the last draft token is not carried yet
    assert walk.step() and calls                               # asked past it: its forced tokens follow
    carried = walk.keep[len(first):]                           # (up to where the keyless draft ran out)
    assert carried and " is forced here".startswith(tok.decode(carried))
    assert walk.keys[len(first):] == [None] * len(carried)
    walk.close()
    assert seq.matcher.num_accepted == 0


def test_forced_text_keys_stay_short_and_match_a_draft_that_became_output():
    """A state key spells out only the last KEY_TOKENS accepted tokens (O(1) in the output length),
    and a walked draft's key equals the key of the same tokens once they are output."""
    from types import SimpleNamespace
    from deepinfer.engine.speculation.jump_forward import ForcedText
    n = ForcedText.KEY_TOKENS
    output = list(range(1000))
    seq = SimpleNamespace(matcher=SimpleNamespace(num_accepted=1003), output_token_ids=output)
    walked = ForcedText.state_key(seq, [7, 8, 9])
    assert walked is not None and len(walked[2]) == n and walked[1] == 1003
    seq.output_token_ids = output + [7, 8, 9]
    assert ForcedText.state_key(seq) == walked
    seq.output_token_ids = output + [7, 8, 5]                # another last token: another state
    assert ForcedText.state_key(seq) != walked
    seq.matcher.num_accepted = 1000 + n
    seq.output_token_ids = output
    assert ForcedText.state_key(seq, list(range(n))) is None  # longer than a key spells out
