"""The declared draft decides which keywords validate (json_drafts.py): keywords the draft does
not have, and in drafts 4-7 the siblings of `$ref`, are ignored as jsonschema ignores them (under
`not` / `oneOf` / `if` enforcing them would let invalid instances through)."""

import jsonschema
import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json import drafts as json_drafts
from deepinfer.constraints.frontends.json.normalize import VALIDATION

from json_verdicts import BYTE_COMPILER as _COMPILER, accepts as _accepts, valid as _valid

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D19 = "https://json-schema.org/draft/2019-09/schema"
D20 = "https://json-schema.org/draft/2020-12/schema"
INT = {"a": {"type": "integer"}}

CASES = [  # (schema, text): the matcher must agree with jsonschema on each
    ({"$schema": D4, "oneOf": [{"const": []}, {"type": "number"}]}, "0.5"),           # no const in 4
    ({"$schema": D4, "type": "integer", "if": {"minimum": 5}, "then": {"maximum": 3}}, "7"),  # no if
    ({"$schema": D4, "type": "integer", "minimum": 3, "exclusiveMinimum": 5}, "3"),    # a flag in 4
    ({"$schema": D4, "type": "integer", "minimum": 3, "exclusiveMinimum": 5}, "4"),
    ({"$schema": D6, "oneOf": [{"if": {"minimum": 5}, "then": {"maximum": 3}}, {"type": "integer"}]}, "7"),
    ({"$schema": D19, "type": "array", "prefixItems": [True], "items": {"type": "string"}}, "[0]"),
    ({"$schema": D19, "type": "array", "prefixItems": [{"type": "integer"}], "items": False}, "[1]"),
    ({"$schema": D7, "definitions": INT, "not": {"$ref": "#/definitions/a", "minimum": 5}}, "1"),
    ({"$schema": D7, "definitions": INT, "not": {"$ref": "#/definitions/a", "minimum": 5}}, '"x"'),
    ({"$schema": D7, "definitions": INT,
      "oneOf": [{"$ref": "#/definitions/a", "minimum": 5}, {"type": "integer", "maximum": 10}]}, "3"),
    ({"$schema": D7, "definitions": INT, "if": {"$ref": "#/definitions/a", "minimum": 5},
      "then": {"const": 7}, "else": {"type": "integer"}}, "3"),
    ({"$schema": D7, "definitions": INT, "$ref": "#/definitions/a", "minimum": 5}, "4"),
    ({"$schema": D4, "definitions": INT, "$ref": "#/definitions/a", "maximum": 0}, "4"),
    ({"$schema": D20, "definitions": INT, "$ref": "#/definitions/a", "minimum": 5}, "4"),  # 2020: applies
    ({"$schema": D7, "type": "object", "unevaluatedProperties": False}, '{"a":1}'),       # not in 7
    # jsonschema looks URIs up exactly: these are unknown, so 2020-12
    ({"$schema": "https://json-schema.org/draft-07/schema#", "definitions": INT,
      "$ref": "#/definitions/a", "maximum": 1}, "4"),
    ({"$schema": "https://json-schema.org/draft-04/schema#", "const": 5}, "6"),
    ({"$schema": "http://json-schema.org/draft/2019-09/schema#", "prefixItems": [{"type": "integer"}]}, '["a"]'),
    ({"$schema": "http://json-schema.org/draft-04/schema", "const": 5}, "6"),  # draft-04 without '#'
    # drafts 4-7 ignore an $id next to $ref too: the ref resolves against the document
    ({"$schema": D7, "$id": "http://example.com/root.json", "definitions": INT,
      "properties": {"x": {"$ref": "#/definitions/a", "$id": "http://other.example/x.json"}}}, '{"x":"a"}'),
    ({"$schema": D7, "$id": "http://example.com/root.json", "definitions": INT,
      "properties": {"x": {"$ref": "#/definitions/a", "$id": "http://other.example/x.json"}}}, '{"x":1}'),
    # draft-04: the float 1.0 is no integer, the int 1 is, and enum equality takes 1 == 1.0
    ({"$schema": D4, "enum": [1.0], "not": {"type": "integer"}}, "1"),
    ({"$schema": D4, "enum": [1.0], "not": {"type": "integer"}}, "1.0"),
    ({"$schema": D4, "oneOf": [{"type": "integer"}, {"enum": [1.0, 2.0]}]}, "1"),
    ({"$schema": D4, "oneOf": [{"type": "integer"}, {"enum": [1.0, 2.0]}]}, "3"),
    # no $schema: `dependencies` enforced, but negated as 2020-12 reads it (no such keyword)
    ({"oneOf": [{"not": {"required": ["x"]}}, {"dependencies": {"x": False}}]}, '"s"'),
    ({"oneOf": [{"dependencies": {"a": ["b"]}}, {"type": "object"}]}, '{"a":1}'),
]


@pytest.mark.parametrize("schema,text", CASES)
def test_matcher_reads_the_declared_draft_like_jsonschema(schema, text):
    assert _accepts(schema, text) == _valid(schema, text)


@pytest.mark.parametrize("schema", [
    {"$schema": D4, "type": "string", "not": {"const": "a"}},   # draft-04: not {} rejects everything
    {"$schema": D4, "type": "integer", "not": {"exclusiveMinimum": 5}},
])
def test_what_the_draft_makes_unsatisfiable_is_an_error(schema):
    with pytest.raises(ConstraintError, match="unsatisfiable"):
        _COMPILER.compile_json_schema(schema)


def test_draft_03_is_refused():
    with pytest.raises(ConstraintError, match="draft-03"):
        _COMPILER.compile_json_schema({"$schema": "http://json-schema.org/draft-03/schema#", "type": "string"})


def test_only_empty_pattern_next_to_additional_properties_is_refused():
    with pytest.raises(ConstraintError, match="/patternProperties"):
        _COMPILER.compile_json_schema({"patternProperties": {"": {"type": "integer"}},
                                       "additionalProperties": False})
    _COMPILER.compile_json_schema({"patternProperties": {"": {"type": "integer"}}})  # fine alone


_INSIDE = {  # keywords jsonschema reads inside another keyword's validator
    "draft-04": {"exclusiveMinimum", "exclusiveMaximum"},
    "draft-06": set(), "draft-07": {"then", "else"},
    "2019-09": {"then", "else", "minContains", "maxContains"},
    "2020-12": {"then", "else", "minContains", "maxContains"},
}
_VALIDATORS = {"draft-04": jsonschema.Draft4Validator, "draft-06": jsonschema.Draft6Validator,
               "draft-07": jsonschema.Draft7Validator, "2019-09": jsonschema.Draft201909Validator,
               "2020-12": jsonschema.Draft202012Validator}


@pytest.mark.parametrize("marker,draft", json_drafts._DRAFTS)
def test_ignored_keywords_are_exactly_those_jsonschema_lacks(marker, draft):
    lacks = VALIDATION - set(_VALIDATORS[marker].VALIDATORS) - _INSIDE[marker]
    assert draft.ignored == lacks


@pytest.mark.parametrize("schema,pointer", [
    # (with `type: integer` items both compile since contains is counted with maxItems: json_contains)
    ({"type": "array", "not": {"items": {"const": 1}}, "maxItems": 3}, "/not/items/not"),
    ({"oneOf": [{"type": "array", "items": {"const": 1}}, {"type": "array", "maxItems": 1}]},
     "/oneOf/0/items/not"),
    ({"$schema": D4, "type": "array", "not": {"items": [{"enum": [1]}], "additionalItems": False}},
     "/not/items/0/not"),
])
def test_errors_about_rewritten_keywords_name_what_was_written(schema, pointer):
    # `not: {items}` is lowered as `contains: {not}` and tuple `items` as `prefixItems`: the
    # error must still point at the keyword the schema has
    with pytest.raises(ConstraintError, match=f"JSON Schema {pointer}: "):
        _COMPILER.compile_json_schema(schema)


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "array", "minItems": 10**30}, "/minItems"),             # OverflowError before
    ({"type": "array", "maxItems": 10_000}, "/maxItems"),             # 37 s before
    ({"type": "array", "contains": {"type": "integer"}, "minContains": 100_000}, "/minContains"),  # hung
])
def test_counts_out_of_reach_are_refused_at_their_pointer(schema, pointer):
    with pytest.raises(ConstraintError, match=f"JSON Schema {pointer}: "):
        _COMPILER.compile_json_schema(schema)
    assert _COMPILER.compile_json_schema(schema, strict=False).annotations  # the skip is listed


@pytest.mark.parametrize("schema,text", [
    ({"not": {"not": {"uniqueItems": True}}}, '["x","x"]'),              # a double negation is X
    ({"not": {"anyOf": [{"not": {"uniqueItems": True}}]}}, '["x","x"]'),
    ({"not": {"not": {"uniqueItems": True}}}, '["x","y"]'),
    ({"$schema": D4, "oneOf": [{"enum": [1e20]}, {"type": "integer"}]}, "100000000000000000000"),
])
def test_round_three_findings_agree_with_jsonschema(schema, text):
    assert _accepts(schema, text) == _valid(schema, text)


def test_a_sub_schema_declaring_another_draft_is_refused():
    # jsonschema validates it with its own draft, the grammar reads the document's
    schema = {"properties": {"a": {"$schema": D4, "type": "integer", "not": {"const": 1}}}}
    with pytest.raises(ConstraintError, match="/properties/a/\\$schema"):
        _COMPILER.compile_json_schema(schema)
    _COMPILER.compile_json_schema({"$schema": D7, "properties": {"a": {"$schema": D7, "type": "integer"}}})


def test_maxitems_spans_are_bounded_over_the_whole_schema():
    two = {"type": "object", "properties": {"a": {"type": "array", "maxItems": 2000},
                                            "b": {"type": "array", "maxItems": 2500}}}
    with pytest.raises(ConstraintError, match="/properties/b/maxItems"):
        _COMPILER.compile_json_schema(two)
