"""Constrained outputs that finish within max_tokens: a tiny random model writes JSON and regex
outputs under budgets from exactly what the constraint needs upwards; every output is complete and
validates (jsonschema / re.fullmatch), ended by the end token (finish_reason "stop") or, complete,
by max_tokens itself ("length" only with exactly max_tokens tokens); a budget below the need is
refused before generation."""

import json
import re

import jsonschema
import pytest

from deepinfer import SamplingParams
from deepinfer.constraints import ConstraintError, check_budget
from deepinfer.constraints.completion import completions, needed_tokens
from deepinfer.types import FinishReason

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "what": {"type": "string"}, "price": {"type": "number"}}, "required": ["what", "price"]}},
    "note": {"type": "string"}},
    "required": ["name", "items"]}


def assert_complete_finish(out, max_tokens: int) -> None:
    assert len(out.token_ids) <= max_tokens
    assert out.finish_reason == FinishReason.STOP or (
        out.finish_reason == FinishReason.LENGTH and len(out.token_ids) == max_tokens), (max_tokens, out)


def test_json_outputs_finish_complete_within_tight_budgets(make_llm):
    llm = make_llm()
    compiled = llm.engine.compiler.compile_json_schema(SCHEMA)
    need = needed_tokens(compiled)
    assert need is not None and need > 5
    budgets = [need, need + 3, need + 20, need + 60]
    params = [SamplingParams(json_schema=SCHEMA, temperature=1.5, seed=s, max_tokens=b)
              for b in budgets for s in range(3)]
    outs = llm.generate(["x"] * len(params), params)
    for out, p in zip(outs, params):
        assert_complete_finish(out, p.max_tokens)
        jsonschema.validate(json.loads(out.text), SCHEMA)


def test_regex_outputs_finish_complete(make_llm):
    llm = make_llm()
    pattern = r"[a-z]+( [a-z]+)*\."
    compiled = llm.engine.compiler.compile_regex(pattern)
    need = needed_tokens(compiled)
    outs = llm.generate(["w"] * 4, [SamplingParams(regex=pattern, temperature=2.0, seed=s, max_tokens=need + s)
                                    for s in range(4)])
    for s, out in enumerate(outs):
        assert_complete_finish(out, need + s)
        assert re.fullmatch(pattern, out.text), out.text


def test_budget_below_need_is_refused_before_generation(make_llm):
    llm = make_llm()
    compiled = llm.engine.compiler.compile_json_schema(SCHEMA)
    need = needed_tokens(compiled)
    with pytest.raises(ConstraintError, match=f"raise max_tokens to at least {need}"):
        check_budget(compiled, need - 1)
    check_budget(compiled, need)  # enough
    out = llm.generate(["x"], SamplingParams(json_schema=SCHEMA, max_tokens=need - 1))[0]
    assert out.finish_reason == FinishReason.ERROR and "max_tokens" in out.outputs[0].error
    assert out.token_ids == []


def test_walk_bound_falls_by_one_along_its_first_token(make_llm):
    """The property the guarantee rests on, checked state by state down a whole walk."""
    llm = make_llm()
    compiled = llm.engine.compiler.compile_json_schema(SCHEMA)
    comp = completions(compiled)
    state = compiled.automaton.initial_state()
    bound = comp.bound(state)
    while bound[0]:
        state = compiled.automaton.next_state(state, bound[1])
        after = comp.bound(state)
        assert after[0] == bound[0] - 1
        bound = after
    assert compiled.automaton.is_accepting(state)
