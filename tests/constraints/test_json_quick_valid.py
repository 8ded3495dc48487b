"""quick_valid agrees with jsonschema wherever it gives a verdict."""

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.quick_valid import quick_valid

SCHEMAS = [
    {"type": "string", "enum": ["a", "bc", "1"], "description": "x"},
    {"type": ["string", "null"], "maxLength": 1},
    {"type": "integer"},
    {"enum": [1, "1", True]},
    {"const": "bc", "title": "t"},
    {"minLength": 2, "maxLength": 3},
    {"type": "string", "pattern": "^a"},          # pattern: no verdict
    {"type": "string", "format": "email"},        # format: no verdict
    {"type": "string", "minLength": 1.5},         # float bound: no verdict
    {"type": "text"},                             # unknown type: jsonschema's error stays
]


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("value", ["a", "bc", "1", "", "\U0001F600", 1])
def test_verdict_matches_jsonschema(schema, value):
    verdict = quick_valid(value, schema)
    if verdict is None:
        return
    assert verdict == jsonschema.Draft202012Validator(schema).is_valid(value)


def test_gives_verdicts_for_plain_string_enums():
    assert quick_valid("a", {"type": "string", "enum": ["a"]}) is True
    assert quick_valid("b", {"type": "string", "enum": ["a"]}) is False
    assert quick_valid("a", {"type": "string", "pattern": "a"}) is None
    assert quick_valid("a", {"type": "text"}) is None
