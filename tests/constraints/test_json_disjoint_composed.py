"""A `oneOf` branch that is itself a `oneOf` / `anyOf` is disjoint from another branch when each
of its own branches is: Swagger 2.0's `parameter: oneOf [body, nonBody]` against `jsonReference`
is a plain union (it expanded past 256 alternatives), and what is generated stays sound against
jsonschema where a nested branch does overlap (exact unless the lowering notes otherwise)."""

import itertools
import json

import pytest
from json_verdicts import assert_regex_verdicts

REF = {"type": "object", "required": ["$ref"], "additionalProperties": False,
       "properties": {"$ref": {"type": "string"}}}


def _located(where: str) -> dict:
    return {"additionalProperties": False, "patternProperties": {"^x-": {}},
            "properties": {"in": {"enum": [where]}, "name": {"type": "string"},
                           "type": {"enum": ["string", "number"]}, "required": {"type": "boolean"},
                           "description": {"type": "string"}}}


NON_BODY = {"type": "object", "required": ["name", "in", "type"],
            "oneOf": [_located(w) for w in ("header", "query", "path", "formData")]}
BODY = {"type": "object", "required": ["name", "in", "schema"], "additionalProperties": False,
        "properties": {"name": {"type": "string"}, "in": {"enum": ["body"]}, "schema": {"type": "object"}}}
SWAGGER_LIKE = {"type": "array", "items": {"oneOf": [{"oneOf": [BODY, NON_BODY]}, REF]}}


def test_swagger_like_parameter_list_compiles_and_is_exact():
    # members in declaration order (the order the grammar generates)
    items = [{"$ref": "#/p"}, {"in": "query", "name": "q", "type": "string"},
             {"name": "b", "in": "body", "schema": {}}, {"in": "header", "name": "h", "type": "number", "x-y": 1},
             {"$ref": "#/p", "name": "q"}, {"in": "body", "name": "q", "type": "string"},
             {"in": "cookie", "name": "q", "type": "string"}, {"in": "query", "type": "string"}, {}]
    grammar = assert_regex_verdicts(SWAGGER_LIKE, [list(pair) for pair in itertools.product(items, repeat=2)])
    assert not [n for n in grammar.annotations if "not exact" in n]


# nested branches that overlap the outer one (or each other): the test must not call them disjoint
OVERLAPPING = [
    {"oneOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "string", "maxLength": 1}]},
    {"oneOf": [{"oneOf": [{"type": "integer", "maximum": 2}, {"type": "integer", "minimum": 5}]},
               {"type": "integer", "minimum": 2, "maximum": 5}]},
    {"oneOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
               {"type": "object", "additionalProperties": False, "properties": {"a": {}}}]},
    {"oneOf": [{"type": "object", "properties": {"a": {"const": "p"}}, "required": ["a"]},
               {"anyOf": [{"properties": {"a": {"const": "q"}}, "required": ["a"]}, {"required": ["b"]}]}]},
]
VALUES = [0, 1, 2, 3, 5, 6, "", "x", "xy", {}, {"a": 1}, {"a": 2}, {"b": 0}, {"a": 1, "b": 0},
          {"a": 2, "b": 0}, {"a": "p"}, {"a": "q"}, {"a": "p", "b": 0}, {"a": "q", "b": 0}, None, []]


@pytest.mark.parametrize("schema", OVERLAPPING, ids=[json.dumps(s)[:60] for s in OVERLAPPING])
def test_overlapping_nested_branches_stay_exact(schema):
    assert_regex_verdicts(schema, VALUES, exact=None)  # exact unless the lowering notes otherwise


# Swagger 2.0's `schema: oneOf [schema, fileSchema]`: fileSchema requires `type: file`, the other
# branch does not require `type` but allows only JSON Schema's type names: disjoint (a plain union)
ONE_SIDE_REQUIRED = {"oneOf": [
    {"type": "object", "required": ["type"], "additionalProperties": False,
     "properties": {"type": {"enum": ["file"]}, "format": {"type": "string"}}},
    {"type": "object", "additionalProperties": False,
     "properties": {"type": {"anyOf": [{"enum": ["string", "array"]}, {"type": "array"}]},
                    "format": {"type": "string"}}}]}


def test_a_member_only_one_branch_requires_still_tells_them_apart():
    values = [{}, {"type": "file"}, {"type": "string"}, {"type": ["string"]}, {"type": "x"},
              {"format": "f"}, {"type": "file", "format": "f"}, {"type": "array", "format": ""}, 1]
    assert not assert_regex_verdicts(ONE_SIDE_REQUIRED, values).annotations


def test_an_enum_under_a_draft04_meta_schema_ref_is_evaluated_in_the_meta_schema():
    """`#/definitions/simpleTypes` inside draft-04's `properties/type` resolves in the
    meta-schema, not in the (draft-04) document that refers to it."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"t": {"allOf": [{"$ref": "http://json-schema.org/draft-04/schema#/properties/type"}],
                                   "enum": ["string", "file", ["array"]]}}}
    assert_regex_verdicts(schema, [{}, {"t": "string"}, {"t": "file"}, {"t": ["array"]}, {"t": "array"}])
