"""Jump-forward decoding: forced text is appended without sampling, and outputs stay what the
constraint allows and what a run without jump-forward produces (on the tiny model)."""

import json
import re

import jsonschema

from deepinfer import SamplingParams
from deepinfer.types import FinishReason

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                           "city": {"type": "string", "maxLength": 6}},
          "required": ["name", "age", "city"], "additionalProperties": False}


def run(make_llm, prompts, params, **options):
    llm = make_llm(**options)
    outs = llm.generate(prompts, params)
    return outs, llm.engine.stats()


def test_json_outputs_validate_with_fewer_steps(make_llm):
    # A random tiny model has no preferred tokenization of the forced keys, so its later choices
    # may differ from the run without jump-forward (the identity on a real model is checked on
    # SmolLM2 below); what must hold: valid outputs, forced tokens appended, fewer steps.
    prompts = ["extract: Ada, 36, London", "who?", "x"] * 2
    params = [SamplingParams(json_schema=SCHEMA, temperature=0 if i < 3 else 0.9, seed=i, max_tokens=80)
              for i in range(6)]
    plain, plain_stats = run(make_llm, prompts, params, jump_forward=False)
    jumped, stats = run(make_llm, prompts, params)
    assert stats["jump_forward_tokens"] > 0 and plain_stats["jump_forward_tokens"] == 0
    assert stats["steps"] < plain_stats["steps"]
    for out in jumped:
        assert out.finish_reason in (FinishReason.STOP, FinishReason.LENGTH), out.outputs[0].error
        if out.finish_reason == FinishReason.STOP:
            jsonschema.validate(json.loads(out.text), SCHEMA)
    assert sum(o.finish_reason == FinishReason.STOP for o in jumped) >= 4


def test_seeded_jump_forward_is_deterministic_alone_and_in_a_batch(make_llm):
    params = SamplingParams(json_schema=SCHEMA, temperature=0.9, seed=11, max_tokens=80)
    alone = make_llm().generate(["who?"], params)[0]
    crowd = make_llm().generate(["x", "who?", "extract: Ada"], [SamplingParams(max_tokens=7, ignore_eos=True),
                                                                  params, params])[1]
    assert (alone.text, alone.token_ids) == (crowd.text, crowd.token_ids)


def test_fully_forced_output_needs_no_sampling_step(make_llm):
    llm = make_llm(family="llama")
    outs = llm.generate(["say it:"], SamplingParams(regex="hello world", max_tokens=50))
    assert outs[0].text == "hello world" and outs[0].finish_reason == FinishReason.STOP
    plain = make_llm(jump_forward=False).generate(["say it:"], SamplingParams(regex="hello world", max_tokens=50))
    assert plain[0].text == "hello world"
    assert llm.engine.stats()["jump_forward_tokens"] >= 1
    # complete, and nothing but an end token allowed: the end is forced too, no step at all
    assert outs[0].token_ids[-1] == llm.tokenizer.eos_token_id and llm.engine.stats()["steps"] == 0
    assert plain[0].token_ids[-1] in llm.tokenizer.eos_token_ids


def test_a_completed_constraint_that_may_continue_is_left_to_the_model(make_llm):
    llm = make_llm(family="llama")
    outs = llm.generate(["say it:"], SamplingParams(regex="hello( world)?", max_tokens=50, temperature=0))
    assert outs[0].text in ("hello", "hello world") and llm.engine.stats()["steps"] >= 1


def test_max_tokens_and_stop_strings_apply_inside_forced_text(make_llm):
    llm = make_llm()
    # too few tokens for any complete output: refused before generation, nothing forced
    short = llm.generate(["x"], SamplingParams(regex="abcdefghij(k|l)", max_tokens=2))[0]
    assert short.finish_reason == FinishReason.ERROR and "max_tokens" in short.outputs[0].error
    assert short.token_ids == []
    stopped = llm.generate(["x"], SamplingParams(regex="abcdefghij(k|l)", stop=["ef"], max_tokens=30))[0]
    assert stopped.finish_reason == FinishReason.STOP and stopped.text == "abcd"


def test_logprobs_requests_do_not_jump(make_llm):
    llm = make_llm()
    out = llm.generate(["x"], SamplingParams(regex="abcdefghij(k|l)", logprobs=2, max_tokens=30))[0]
    assert llm.engine.stats()["jump_forward_tokens"] == 0
    assert re.fullmatch("abcdefghij(k|l)", out.text)
    assert len(out.outputs[0].logprobs) == len(out.token_ids)


def test_a_finished_sequence_drops_its_matcher(make_llm):
    """Request <-> Sequence is a reference cycle; the matcher's states must not wait for the
    cyclic GC once the output is final."""
    llm = make_llm()
    engine = llm.engine
    rid = engine.add_request(llm.tokenizer.encode("extract: Ada, 36"),
                             SamplingParams(json_schema=SCHEMA, temperature=0, max_tokens=40))
    request = engine.requests[rid]
    seen = []
    while engine.has_unfinished():
        engine.step()
        seen += [s.matcher for s in request.sequences if s.matcher is not None]
    assert seen and all(s.finished and s.matcher is None for s in request.sequences)


def test_extendable_by_accepting_each_longer_token_equals_the_mask(make_llm):
    """ForcedText.extendable asks the matcher token by token when few longer tokens exist, else
    reads a mask; both must agree at every state of real outputs, for every token."""
    import random

    from deepinfer.constraints import Matcher
    from deepinfer.engine.speculation.jump_forward import ForcedText
    llm = make_llm()
    outs = llm.generate(["extract: Ada, 36, London", "who?"],
                        [SamplingParams(json_schema=SCHEMA, temperature=t, seed=1, max_tokens=60) for t in (0, 1.0)])
    compiled = llm.engine.compiler.compile_json_schema(SCHEMA)
    by_mask, by_accept = ForcedText(llm.tokenizer), ForcedText(llm.tokenizer)
    by_mask.ACCEPT_TESTS, by_accept.ACCEPT_TESTS = 0, 10 ** 9
    rng = random.Random(0)
    checked = 0
    for out in outs:
        seq = type("Seq", (), {})()
        seq.matcher = Matcher(compiled)
        for token in out.outputs[0].token_ids:
            depth = seq.matcher.num_accepted
            for candidate in rng.sample(range(llm.tokenizer.vocab_size), 40) + [token]:
                mask = by_mask.extendable(seq, candidate)
                assert by_accept.extendable(seq, candidate) == mask
                assert seq.matcher.num_accepted == depth          # asking moved nothing
                checked += mask
            if not seq.matcher.accept_token(token):
                break
    assert checked > 0
