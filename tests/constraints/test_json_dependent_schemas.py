"""`dependentSchemas` (and draft-07 schema-valued `dependencies`) of any shape, enforced as the
conditional they mean: if the instance is an object with that member, then the schema. Only
`required` dependent schemas used to be enforced; the rest failed the compile. Differential
against jsonschema through the byte-level matcher, on a table of instances."""

from __future__ import annotations

import json

import pytest
from json_verdicts import accepts, valid

VALUES = [{}, {"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "b": "xy"}, {"a": 1, "b": 2}, {"b": 2}, {"b": "x"},
          {"a": "s", "b": 1}, {"a": 1, "b": 5}, {"b": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}, {"a": {"a": 1}},
          {"a": 1, "c": "z"}, 1, "s", [], None]

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
     "dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
     "properties": {"a": {"type": "integer"}, "b": {}},
     "dependencies": {"a": {"properties": {"b": {"type": "string"}}}}},
    {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "dependentSchemas": {"a": {"required": ["b"], "properties": {"b": {"minLength": 2}}}}},
    {"type": "object", "properties": {"a": {}, "b": {}},
     "dependentSchemas": {"a": {"required": ["b"]}, "b": {"not": {"required": ["c"]}}},
     "if": {"required": ["a"]}, "then": {"properties": {"a": {"type": "integer"}}}},
    {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
     "dependentSchemas": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"properties": {"b": {"minimum": 3}}}}},
    {"dependentSchemas": {"a": {"oneOf": [{"type": "string"}]}}},
    {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
     "dependentSchemas": {"a": {"if": {"required": ["b"]}, "then": {"required": ["c"]}}}},
    {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "string"}},
     "dependentSchemas": {"a": {"anyOf": [{"required": ["c"]}, {"properties": {"a": {"minimum": 2}}}]}}},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"},
     "dependentSchemas": {"a": {"maxProperties": 1}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:70] for s in SCHEMAS])
def test_dependent_schemas_against_jsonschema(schema):
    for value in VALUES:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text


def test_a_dependent_false_forbids_the_member():
    schema = {"type": "object", "dependentSchemas": {"a": False}}
    assert accepts(schema, '{"b":1}') and not accepts(schema, '{"a":1}')
