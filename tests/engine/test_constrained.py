"""Constrained generation end to end: every output is accepted by a fresh matcher and matches
its regex / validates against its JSON Schema, under batching with unconstrained requests."""

import json
import re

import jsonschema

from deepinfer import SamplingParams
from deepinfer.constraints import Matcher
from deepinfer.types import FinishReason

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": False}


def replay(compiled, token_ids) -> Matcher:
    matcher = Matcher(compiled)
    for token in token_ids:
        assert matcher.accept_token(token), token_ids
    return matcher


def test_regex_outputs_match_and_replay(make_llm):
    llm = make_llm()
    pattern = r"(19|20)\d{2}-(0[1-9]|1[0-2])-[0-3]\d( [a-z]{1,6})?"
    prompts = ["date:", "when?", "x"] * 3
    params = [SamplingParams(regex=pattern, temperature=1.2, seed=i, max_tokens=40) for i in range(9)]
    params += [SamplingParams(max_tokens=10, ignore_eos=True)] * 3        # unconstrained neighbours
    outs = llm.generate(prompts + ["free"] * 3, params)
    compiled = llm.engine.compiler.compile_regex(pattern)
    for out in outs[:9]:
        assert out.finish_reason == FinishReason.STOP, out
        assert re.fullmatch(pattern, out.text), out.text
        matcher = replay(compiled, out.token_ids)
        assert matcher.is_terminated() or matcher.is_completed()
    assert all(o.finish_reason == FinishReason.LENGTH for o in outs[9:])
    assert llm.engine.stats()["constraint_compile_seconds"] > 0


def test_lark_grammar_output(make_llm):
    llm = make_llm()
    grammar = 'start: "(" expr ")"\nexpr: NUMBER | NUMBER "+" expr\nNUMBER: /[0-9]{1,2}/'
    outs = llm.generate(["sum:"] * 4, [SamplingParams(grammar=grammar, temperature=1.0, seed=i, max_tokens=40)
                                       for i in range(4)])
    for out in outs:
        assert out.finish_reason == FinishReason.STOP
        assert re.fullmatch(r"\(\d{1,2}(\+\d{1,2})*\)", out.text), out.text


def test_json_schema_outputs_validate(make_llm):
    llm = make_llm()
    params = [SamplingParams(json_schema=SCHEMA, temperature=1.0, seed=i, max_tokens=120) for i in range(6)]
    outs = llm.generate(["extract: Ada, 36"] * 6, params)
    for out in outs:
        assert out.finish_reason in (FinishReason.STOP, FinishReason.LENGTH), out.outputs[0].error
        if out.finish_reason == FinishReason.STOP:
            jsonschema.validate(json.loads(out.text), SCHEMA)
    assert sum(o.finish_reason == FinishReason.STOP for o in outs) >= 4
