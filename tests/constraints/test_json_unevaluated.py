"""`unevaluatedProperties` where what is evaluated does not branch: one more `allOf` member
(json_unevaluated.py). Differential against jsonschema (2020-12) through the byte-level
matcher; where a branch decides what is evaluated, the keyword is refused with its pointer."""

from __future__ import annotations

import json

import pytest
from json_verdicts import accepts, valid

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json_schema import lower_json_schema

VALUES = [{}, {"a": "x"}, {"a": 1}, {"b": 2}, {"a": "x", "b": 2}, {"a": "x", "b": "y"}, {"c": 1}, {"x1": 3},
          {"x1": "s"}, {"a": "x", "c": True}, {"c": "long"}, {"c": "s"}, 1, "s", None, []]

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": False},
    {"allOf": [{"properties": {"a": {"type": "string"}}}], "properties": {"b": {"type": "integer"}},
     "unevaluatedProperties": False},
    {"$ref": "#/$defs/base", "properties": {"b": {}}, "unevaluatedProperties": False,
     "$defs": {"base": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    {"properties": {"a": {}}, "patternProperties": {"^x[0-9]$": {"type": "integer"}},
     "unevaluatedProperties": {"type": "string", "maxLength": 2}},
    {"allOf": [{"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}],
     "unevaluatedProperties": False},                       # additionalProperties evaluates everything
    {"allOf": [{"properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}}],
     "unevaluatedProperties": False},                       # so does a nested unevaluatedProperties
    {"allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}], "unevaluatedProperties": {"const": True},
     "$defs": {"a": {"properties": {"a": {"type": "string"}}}, "b": {"properties": {"b": {"type": "integer"}}}}},
    {"type": "object", "properties": {"o": {"properties": {"a": {}}, "unevaluatedProperties": False}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:70] for s in SCHEMAS])
def test_unevaluated_properties_against_jsonschema(schema):
    for value in VALUES + [{"o": v} for v in VALUES[:10]]:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "unevaluatedProperties": False},
    {"allOf": [{"anyOf": [{"properties": {"a": {}}}]}], "unevaluatedProperties": False},
    {"if": {"properties": {"a": {}}}, "then": {"properties": {"b": {}}}, "unevaluatedProperties": False},
])
def test_branching_evaluation_is_refused(schema):
    with pytest.raises(ConstraintError, match="/unevaluatedProperties: `unevaluatedProperties` is not enforced"):
        lower_json_schema(schema)
