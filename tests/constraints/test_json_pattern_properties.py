"""patternProperties split into name regions (exact), differential against jsonschema."""

import json
import re
import sys

import jsonschema
import pytest

from deepinfer.constraints.frontends.json_regex import grammar_to_regex
from deepinfer.constraints.frontends.json_schema import lower_json_schema

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
