"""`not: {additionalProperties: ...}`: an object with some member the negated schema declares by
no property and no pattern, whose value its additionalProperties rejects. Generated exactly
(declared or undeclared member, several at once: json_some_member), differential against jsonschema:
Swagger 2.0's `responses` ("not only x- members") and oneOf branches of closed objects."""

import itertools
import json

import pytest
from json_verdicts import assert_regex_verdicts

from deepinfer.constraints.frontends.json.schema import lower_json_schema

SCHEMAS = [
    # Swagger 2.0 `responses`: status codes or x- extensions, not x- extensions only
    {"type": "object", "minProperties": 1, "additionalProperties": False,
     "patternProperties": {"^([0-9]{3})$|^(default)$": {"type": "integer"}, "^x-": {}},
     "not": {"type": "object", "additionalProperties": False, "patternProperties": {"^x-": {}}}},
    {"type": "object", "not": {"additionalProperties": False}},
    {"type": "object", "not": {"additionalProperties": False, "properties": {"a": {}}}},
    {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
     "not": {"additionalProperties": False, "properties": {"a": {}}}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"],
     "not": {"additionalProperties": False, "properties": {"b": {}}}},
    {"type": "object", "not": {"additionalProperties": {"type": "string"}, "properties": {"a": {}}}},
    {"type": "object", "maxProperties": 2, "not": {"additionalProperties": {"type": "string"}}},
    {"type": "object", "patternProperties": {"^b": {"type": "integer"}},
     "not": {"additionalProperties": False, "patternProperties": {"^a": {}}}},
    # several at once: a member other than a, and one other than b (one member may be both)
    {"type": "object", "not": {"additionalProperties": False, "properties": {"a": {}}},
     "allOf": [{"not": {"additionalProperties": False, "properties": {"b": {}}}}]},
    {"type": "object", "maxProperties": 2, "properties": {"a": {}},
     "allOf": [{"not": {"additionalProperties": {"type": "string"}, "properties": {"a": {}}}},
               {"not": {"additionalProperties": False, "properties": {"200": {}}}}]},
    {"oneOf": [{"type": "object", "additionalProperties": False, "properties": {"a": {}}},
               {"type": "object", "additionalProperties": False, "properties": {"b": {}}},
               {"type": "object", "additionalProperties": False, "properties": {"a": {}, "b": {}}}]},
    {"oneOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
               {"type": "object", "additionalProperties": False, "properties": {"a": {}}}]},
    {"oneOf": [{"type": "object", "properties": {"a": {"const": "x"}}, "required": ["a"]},
               {"type": "object", "additionalProperties": False, "properties": {"a": {}, "b": {}}}]},
]
NAMES = ["a", "b", "200", "x-y"]
VALUES = [dict(zip(keys, vals)) for n in range(3) for keys in itertools.combinations(NAMES, n)
          for vals in itertools.product([1, "x"], repeat=n)] + [None, 1, [], {"default": 1, "x-": "s"}]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:60] for s in SCHEMAS])
def test_negated_additional_properties_is_exact(schema):
    # members in the order the schemas declare them
    assert assert_regex_verdicts(schema, VALUES).annotations == []


# `not: {patternProperties}`: some member a pattern matches has a value that pattern's schema rejects
PATTERN_SCHEMAS = [
    {"type": "object", "not": {"patternProperties": {"^a": {"type": "string"}}}},
    {"type": "object", "additionalProperties": False, "patternProperties": {"b": {}},
     "not": {"patternProperties": {"^a": {"type": "string"}}}},
    {"type": "object", "not": {"patternProperties": {"^a": {"type": "string"}, "b": {"type": "null"}}}},
    {"type": "object", "not": {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False}},
    {"oneOf": [{"type": "object", "patternProperties": {"a": {"type": "string"}}},
               {"type": "object", "patternProperties": {"b": {"type": "string"}}}]},
]
PATTERN_VALUES = [dict(zip(keys, vals)) for n in range(3) for keys in itertools.combinations(["a", "ab", "b", "x"], n)
                  for vals in itertools.product([1, "x", None], repeat=n)] + [None, 1, []]


@pytest.mark.parametrize("schema", PATTERN_SCHEMAS, ids=[json.dumps(s)[:60] for s in PATTERN_SCHEMAS])
def test_negated_pattern_properties_is_exact(schema):
    assert assert_regex_verdicts(schema, PATTERN_VALUES).annotations == []


def test_a_negated_additional_properties_on_a_big_object_stays_polynomial():
    """The presence machine names each next state once (emit-or-skip factored), else the
    grammar tree doubles per optional member (12 members printed as ~13 MB before)."""
    props = {f"p{i}": {"type": "string"} for i in range(12)}
    schema = {"type": "object", "properties": props,
              "not": {"additionalProperties": False, "properties": {"p0": {}}}}
    assert len(str(lower_json_schema(schema, whitespace="compact"))) < 1_000_000
