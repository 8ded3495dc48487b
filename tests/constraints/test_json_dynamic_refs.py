"""`$dynamicRef` / `$recursiveRef` in a document of one schema resource are plain `$ref`s
(json_dynamic_refs.py). Differential against jsonschema on recursive trees; with a nested
schema resource (where the dynamic scope can pick another anchor) they are still refused."""

from __future__ import annotations

import json

import pytest
from json_verdicts import accepts, valid

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json.schema import lower_json_schema

D2020 = "https://json-schema.org/draft/2020-12/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
TREES = [
    {"$schema": D2020, "$dynamicAnchor": "node", "type": "object",
     "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$dynamicRef": "#node"}}},
     "required": ["v"]},
    {"$schema": D2019, "$recursiveAnchor": True, "type": "object",
     "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$recursiveRef": "#"}}},
     "required": ["v"]},
    {"$schema": D2020, "$defs": {"t": {"$dynamicAnchor": "t", "type": "object",
                                       "properties": {"v": {"type": "integer"},
                                                      "kids": {"type": "array", "items": {"$dynamicRef": "#t"}}},
                                       "required": ["v"]}},
     "$ref": "#/$defs/t"},
]
VALUES = [{"v": 1}, {"v": 1, "kids": []}, {"v": 1, "kids": [{"v": 2}]},
          {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}, {"v": 1, "kids": [{"w": 2}]},
          {"v": 1, "kids": [{"v": "x"}]}, {"kids": []}, {"v": 1, "kids": [1]}, 3]


@pytest.mark.parametrize("schema", TREES, ids=["dynamicRef", "recursiveRef", "dynamicRef-in-defs"])
def test_static_dynamic_references_against_jsonschema(schema):
    for value in VALUES:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text


def test_a_nested_resource_keeps_them_refused():
    schema = {"$schema": D2020, "$dynamicAnchor": "node", "type": "object",
              "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}},
                             "ext": {"$id": "https://example.com/ext", "$dynamicAnchor": "node", "type": "string"}}}
    with pytest.raises(ConstraintError, match=r"\$dynamicRef"):
        lower_json_schema(schema)
