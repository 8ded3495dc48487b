"""oneOf branches told apart by string patterns, string lengths or number ranges are disjoint
(a plain union, no negations): a 17-way oneOf keyed by a `type` pattern compiles, and what is
generated stays exact against jsonschema, including overlaps that only Python's `$` (before a
final newline) or equal bounds create."""

import json
import re

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

SCHEMAS = [
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}]},
    {"oneOf": [{"type": "string", "pattern": "^x$"}, {"type": "string", "pattern": "\n$"}]},
    {"oneOf": [{"type": "string", "maxLength": 1}, {"type": "string", "minLength": 2}]},
    {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "minLength": 2}]},
    {"oneOf": [{"type": "integer", "maximum": 3}, {"type": "integer", "minimum": 4}]},
    {"oneOf": [{"type": "integer", "maximum": 3}, {"type": "integer", "minimum": 3}]},
    {"oneOf": [{"type": "number", "exclusiveMaximum": 3}, {"type": "number", "minimum": 3}]},
    {"oneOf": [{"type": "number", "maximum": 3}, {"type": "integer", "exclusiveMinimum": 3}]},
    {"oneOf": [{"pattern": "^a"}, {"type": "string", "pattern": "^b"}]},
]
VALUES = ["", "a", "b", "ab", "ba", "x", "x\n", "\n", "7", "٣", "abc", 1, 2, 3, 3.5, 4, 5, 2.5, None,
          [], {}, True]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:70] for s in SCHEMAS])
def test_scalar_oneof_is_exact(schema):
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact", any_depth=1)), re.S)
    validator = jsonschema.Draft202012Validator(schema)
    for value in VALUES:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        accepted = rx.fullmatch(text) is not None
        assert accepted <= validator.is_valid(value), f"accepted invalid {text}"
        if value != "x\n" or "\n" not in json.dumps(schema):  # `$` before "\n": not generated
            assert accepted == validator.is_valid(value), f"rejected valid {text}"


def test_seventeen_branches_keyed_by_a_pattern_compile():
    names = ["string", "boolean", "integer", "decimal", "date", "datetime", "secret", "file", "dir",
             "url", "json", "list", "map", "ref", "any", "null", "bytes"]
    branches = [{"type": "object", "required": ["type", "value"], "additionalProperties": False,
                 "properties": {"type": {"type": "string", "pattern": f"^basic:{n}:$"},
                                "value": {"type": "string"}}} for n in names]
    schema = {"type": "array", "items": {"oneOf": branches}}
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact")), re.S)
    good = [{"type": "basic:date:", "value": "x"}, {"type": "basic:bytes:", "value": ""}]
    assert rx.fullmatch(json.dumps(good, separators=(",", ":")))
    assert not rx.fullmatch(json.dumps([{"type": "basic:nope:", "value": "x"}], separators=(",", ":")))


@pytest.mark.parametrize("schema,where", [
    ({"oneOf": [{"type": "string", "pattern": "^é$"}, {"type": "string", "pattern": "(?a)\\W"}]},
     "/oneOf/1/pattern"),
    ({"type": "string", "not": {"pattern": "(?a)\\D"}}, "/not/pattern"),
    ({"properties": {"x": {"allOf": [{"not": {"pattern": "a*+"}}, {"type": "string"}]}}},
     "/properties/x/allOf/0/not/pattern"),
])
def test_a_negated_pattern_that_cannot_be_read_exactly_is_named_where_it_is(schema, where):
    # (?a)\W matches "é", which the Unicode reading of \W does not: the oneOf would take "é" as
    # disjoint from its first branch, and the negation would let "٣" through
    from deepinfer.constraints import ConstraintError

    with pytest.raises(ConstraintError, match=re.escape(f"JSON Schema {where}: `not` is not enforced")):
        lower_json_schema(schema)


def test_the_ascii_flag_in_a_plain_pattern_compiles():
    rx = re.compile(grammar_to_regex(lower_json_schema({"type": "string", "pattern": "(?a)^\\w+$"},
                                                       whitespace="compact")), re.S)
    assert rx.fullmatch('"ab_1"') and not rx.fullmatch('"é"')
