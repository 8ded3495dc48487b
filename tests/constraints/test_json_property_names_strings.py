"""`propertyNames` with any string keywords (json_scalars.names_language): lengths, patterns with
lengths, formats, `not` of a pattern or of values, enums; the names additional members may take
are their intersection with what the object allows. Only `pattern` or `enum` forms were enforced
before; the rest failed the compile. Differential against jsonschema (formats aside: they are
enforced here, annotations to jsonschema's default validator, so only soundness is checked)."""

from __future__ import annotations

import json

import pytest
from json_verdicts import accepts, valid

NAMES = [{}, {"a": 1}, {"abcd": 1}, {"ab": 1, "c": 2}, {"_x": 1}, {"x": 1}, {"xy": 1}, {"A": 1}, {"abc": 1},
         {"é": 1}, {"_id": 1}, {"a-b": 1}]
EXACT = [
    {"type": "object", "propertyNames": {"maxLength": 3}},
    {"type": "object", "propertyNames": {"minLength": 2, "pattern": "^[a-z]+$"}},
    {"type": "object", "propertyNames": {"not": {"pattern": "^_"}}},
    {"type": "object", "properties": {"_id": {}}, "propertyNames": {"not": {"pattern": "^_"}}},
    {"type": "object", "propertyNames": {"not": {"enum": ["x", "y"]}, "maxLength": 2}},
    {"type": "object", "propertyNames": {"not": {"const": "x"}}},
    {"type": "object", "properties": {"abc": {}}, "propertyNames": {"maxLength": 2}},
    {"type": "object", "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False,
     "propertyNames": {"maxLength": 2}},
]


@pytest.mark.parametrize("schema", EXACT, ids=[json.dumps(s)[:70] for s in EXACT])
def test_string_keywords_on_names(schema):
    for value in NAMES:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert accepts(schema, text) == valid(schema, text), text


def test_a_name_format_is_enforced():
    schema = {"type": "object", "propertyNames": {"format": "uuid"}, "additionalProperties": {"type": "integer"}}
    assert accepts(schema, '{"123e4567-e89b-12d3-a456-426614174000":5}')
    for value in NAMES[1:]:
        assert not accepts(schema, json.dumps(value, ensure_ascii=False, separators=(",", ":")))
