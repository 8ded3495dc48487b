"""patternProperties split into name regions (exact), differential against jsonschema."""

import itertools
import json
import re
import sys

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from json_verdicts import assert_regex_verdicts

SCHEMAS = [
    {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}},
     "patternProperties": {"^c_": {"type": "array"}, "^u_": {}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^c_": {"type": "integer"}},
     "additionalProperties": {"type": "string"}},
    {"type": "object", "patternProperties": {"^c": {"type": "integer"}, "d$": {"type": ["integer", "string"]}}},
    {"type": "object", "patternProperties": {"^c": {"type": "integer"}, "d$": {"type": "string"}}},
    {"type": "object", "allOf": [{"patternProperties": {"^c": {"type": "integer"}}},  # merged members
                                 {"patternProperties": {"d$": {"minimum": 5}, "^c": {"maximum": 10}}}]},
]
VALUES = [{}, {"a": "x"}, {"c_1": [1]}, {"u_1": {"x": 1}}, {"c_1": 1}, {"zz": "s"}, {"zz": 1},
          {"a": "x", "c_": [], "u_": 3}, {"cd": 1}, {"c": 1}, {"d": "x"}, {"cd": "x"}, {"d": 1}, {"a": 1},
          {"c": 30}, {"cd": 7}, {"xd": 7}]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_pattern_properties_regions(schema):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact", any_depth=2)), re.S)
    for v in VALUES:
        text = json.dumps(v, separators=(",", ":"))
        assert (rx.fullmatch(text) is not None) == jsonschema.Draft202012Validator(schema).is_valid(v), text


# patternProperties in several allOf members next to additionalProperties: an undeclared name
# takes, from each member, its matching patterns' schemas, or else that member's
# additionalProperties (json_merge.pp_sides; json_additional splits the names into regions)
SIDED = [
    {"type": "object", "allOf": [
        {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": {"type": "null"}},
        {"patternProperties": {"b": {"type": ["string", "null"]}}, "additionalProperties": False}]},
    {"type": "object", "allOf": [{"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
                                 {"patternProperties": {"b": {}}}]},
    {"type": "object", "allOf": [{"patternProperties": {"^a": {}}, "additionalProperties": False},
                                 {"patternProperties": {"b$": {}}, "additionalProperties": False}]},
    {"type": "object", "allOf": [
        {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": {"type": "boolean"}},
        {"patternProperties": {"a": {"type": ["string", "boolean"]}}, "additionalProperties": {"type": "boolean"}},
        {"patternProperties": {"^ab": {"type": "string"}}}]},
]


@pytest.mark.parametrize("schema", SIDED, ids=[json.dumps(s)[:70] for s in SIDED])
def test_pattern_properties_of_several_members_next_to_additional_properties(schema):
    values = [dict(zip(keys, vals)) for n in range(3) for keys in itertools.combinations(["a", "ab", "b", "x"], n)
              for vals in itertools.product(["s", None, True], repeat=n)]
    assert assert_regex_verdicts(schema, values).annotations == []


ONE_SIDED = [  # one allOf member's patternProperties, the other's properties + additionalProperties
    {"type": "object", "properties": {"x1": {}}, "additionalProperties": {"type": "string"},
     "allOf": [{"patternProperties": {"^x": {"enum": [1, "xyz"]}}}]},
    {"type": "object", "properties": {"x1": {"type": "integer"}, "a": {}}, "additionalProperties": False,
     "allOf": [{"patternProperties": {"^x": {"enum": [1, "xyz"]}}}]},
]


@pytest.mark.parametrize("schema", ONE_SIDED, ids=[json.dumps(s)[:60] for s in ONE_SIDED])
def test_a_declared_name_takes_the_other_members_pattern_not_its_additional(schema):
    """`{"x1": 1}` was rejected: x1's value also had to satisfy the declaring member's
    additionalProperties, which does not apply to a name that member declares."""
    from json_verdicts import accepts, valid

    for value in [{"x1": 1}, {"x1": "xyz"}, {"x2": "xyz"}, {"x2": 1}, {"b": "s"}, {"b": 1}, {}, {"x1": 2}]:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text
