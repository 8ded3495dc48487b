"""multipleOf: lcm merging and unbounded ranges (exact: a remainder automaton times the range's
digits, json_numbers.multiples_by_dfa)."""

import json
import re

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

VALUES = [0, 11, 99, 110, 111, 121, 12, 24, 36, 48, 14, -7, -14, 7 * 2047, 11 * 3000, 1.5, "x"]


@pytest.mark.parametrize("schema,exact", [
    ({"allOf": [{"type": "integer", "multipleOf": 6}, {"multipleOf": 4}]}, True),
    ({"allOf": [{"type": "integer", "multipleOf": 6, "minimum": 0, "maximum": 100}, {"multipleOf": 4}]}, True),
    ({"type": "integer", "multipleOf": 11, "minimum": 100}, True),
    ({"type": "integer", "multipleOf": 7, "not": {"enum": [14, -7.0]}}, True),
    ({"type": "number", "multipleOf": 7}, True),  # (integral spellings only: 7, not 7.0)
])
def test_multiples(schema, exact):
    from json_verdicts import accepts

    grammar = lower_json_schema(schema, whitespace="compact", any_depth=1)
    assert exact or any("multipleOf" in note for note in grammar.annotations)
    for v in VALUES:
        accepted = accepts(schema, json.dumps(v))  # (the grammar may hold a DFA leaf: no regex)
        valid = jsonschema.Draft202012Validator(schema).is_valid(v)
        assert not accepted or valid, v
        if exact or abs(v if not isinstance(v, str) else 0) < 1000:
            assert accepted == valid, v


@pytest.mark.parametrize("schema", [
    {"type": "integer", "not": {"multipleOf": 3}},
    {"type": "number", "minimum": 0, "not": {"multipleOf": 2}},
    {"type": "number", "not": {"not": {"multipleOf": 5}}, "maximum": 100, "minimum": -100},
    {"type": "integer", "multipleOf": 2, "not": {"multipleOf": 4}},
    {"enum": [3, 4, 6, 7.5], "not": {"multipleOf": 3}},
])
def test_not_multiple_of(schema):
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact", any_depth=1)))
    for v in VALUES + [3, 4, 6, 7.5, -4, 2, 1, 0.5]:
        accepted = rx.fullmatch(json.dumps(v)) is not None
        valid = jsonschema.Draft202012Validator(schema).is_valid(v)
        assert not accepted or valid, v
        if isinstance(v, int) and abs(v) < 1000:
            assert accepted == valid, v
