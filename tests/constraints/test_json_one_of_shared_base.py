"""oneOf branches that share a base (`allOf: [{$ref: base}, ...]`): negating branch j inside
branch i skips the properties whose very sub-schema branch i already holds, so the expansion
stays small (four such branches over a base of 8 properties went past 256 alternatives:
MaskBench's Github_hard---o33131). Differential against jsonschema."""

from __future__ import annotations

import json

from json_verdicts import accepts, valid

BASE = {"type": "object", "properties": {k: {"type": "string", "minLength": 1} for k in "abcdefgh"}}
SCHEMA = {
    "$defs": {"base": BASE, "num": {"type": "number"}},
    "oneOf": [
        {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"e1": {}}, "required": ["a", "e1"]}]},
        {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"lo": {"$ref": "#/$defs/num"}}, "required": ["a", "lo"]},
                   {"not": {"required": ["hi"]}}]},
        {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"hi": {"$ref": "#/$defs/num"}}, "required": ["a", "hi"]},
                   {"not": {"required": ["lo"]}}]},
        {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"lo": {"$ref": "#/$defs/num"},
                                                            "hi": {"$ref": "#/$defs/num"}},
                                             "required": ["a", "lo", "hi"]}]},
    ],
}
VALUES = [{"a": "x", "e1": 1}, {"a": "x", "lo": 1}, {"a": "x", "hi": 2}, {"a": "x", "lo": 1, "hi": 2},
          {"a": "x", "e1": 1, "lo": 1}, {"a": "x", "e1": 1, "lo": "s"}, {"a": "", "e1": 1}, {"a": "x"},
          {"a": "x", "lo": "s"}, {"a": "x", "b": "y", "hi": 3}, {"a": "x", "b": "", "hi": 3},
          {"a": "x", "e1": 1, "lo": 1, "hi": 2}, {"lo": 1}, [], "s"]


def test_shared_base_one_of_compiles_and_agrees_with_jsonschema():
    for value in VALUES:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(SCHEMA, text) == valid(SCHEMA, text), text
