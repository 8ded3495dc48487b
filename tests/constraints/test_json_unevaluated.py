"""`unevaluatedProperties` (json_unevaluated.py): one more `allOf` member where what is evaluated
does not branch; where it does, each alternative closes what its own branches evaluated (the
chosen oneOf branch, `if`+`then` or `else`, a present member's dependent schema, an anyOf
branch). Differential against jsonschema (2020-12) through the byte-level matcher."""

from __future__ import annotations

import json

import pytest
from json_verdicts import accepts, valid

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json.schema import lower_json_schema

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


BRANCHING = [
    {"oneOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"type": "integer"}}, "required": ["b"]}], "unevaluatedProperties": False},
    {"type": "object", "properties": {"k": {"enum": ["x", "y"]}}, "if": {"properties": {"k": {"const": "x"}}},
     "then": {"properties": {"a": {}}}, "else": {"properties": {"b": {}}}, "unevaluatedProperties": False},
    {"type": "object", "properties": {"a": {}}, "dependentSchemas": {"a": {"properties": {"b": {"type": "integer"}}}},
     "unevaluatedProperties": False},
    {"allOf": [{"$ref": "#/$defs/base"},
               {"oneOf": [{"required": ["a"]}, {"properties": {"c": {}}, "required": ["c"]}]}],
     "unevaluatedProperties": {"type": "boolean"}, "$defs": {"base": {"properties": {"a": {"type": "string"}}}}},
    {"oneOf": [{"properties": {"a": {}}, "required": ["a"]},
               {"oneOf": [{"properties": {"b": {}}, "required": ["b"]}, {"properties": {"c": {}}, "required": ["c"]}]}],
     "unevaluatedProperties": False},
]
MORE = [{"k": "x", "a": 1}, {"k": "x", "b": 1}, {"k": "y", "b": 1}, {"k": "y", "a": 1}, {"a": 1, "b": 2}, {"b": "s"},
        {"a": "s", "c": 1}, {"c": 1, "b": True}, {"a": "s", "b": 1, "c": 2}]


@pytest.mark.parametrize("schema", BRANCHING, ids=[json.dumps(s)[:70] for s in BRANCHING])
def test_branching_evaluation_against_jsonschema(schema):
    for value in VALUES + MORE:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text


def test_any_of_is_sound_and_says_it_is_not_exact():
    """Where two anyOf branches hold, both evaluate; an alternative credits only its own."""
    schema = {"anyOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "integer"}}}],
              "unevaluatedProperties": {"type": "boolean"}}
    grammar = lower_json_schema(schema)
    assert any("anyOf branch evaluates" in note for note in grammar.annotations)
    for value in VALUES + MORE:
        text = json.dumps(value, separators=(",", ":"))
        assert not accepts(schema, text) or valid(schema, text), text


def test_two_branching_members_with_their_own_keyword_are_refused():
    schema = {"allOf": [{"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "unevaluatedProperties": False},
                        {"anyOf": [{"required": ["a"]}], "unevaluatedProperties": False}]}
    with pytest.raises(ConstraintError, match="unevaluatedProperties"):
        lower_json_schema(schema)


ITEMS = [
    {"type": "array", "prefixItems": [{"type": "string"}], "unevaluatedItems": False},
    {"type": "array", "prefixItems": [{"type": "string"}], "unevaluatedItems": {"type": "integer"}},
    {"allOf": [{"prefixItems": [{}, {}]}], "prefixItems": [{"type": "string"}], "unevaluatedItems": False},
    {"type": "array", "contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"}},
    {"type": "array", "items": {"type": "boolean"}, "unevaluatedItems": False},
    {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "array", "items": [{"type": "string"}],
     "unevaluatedItems": False},
    {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "array", "items": [{"type": "string"}],
     "additionalItems": {"type": "integer"}, "unevaluatedItems": False},
    {"$ref": "#/$defs/pair", "unevaluatedItems": False, "$defs": {"pair": {"prefixItems": [{}, {"type": "integer"}]}}},
]
ARRAYS = [[], ["a"], ["a", 1], ["a", "b"], [1], ["a", 1, 2], ["a", True], [True], [1, "s"], ["a", "b", "c"],
          [True, False], "s", {}]


@pytest.mark.parametrize("schema", ITEMS, ids=[json.dumps(s)[:70] for s in ITEMS])
def test_unevaluated_items_against_jsonschema(schema):
    """`unevaluatedItems` where nothing branches: the items past every evaluated prefix that no
    `contains` matches take its schema (one more allOf member)."""
    for value in ARRAYS:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text
