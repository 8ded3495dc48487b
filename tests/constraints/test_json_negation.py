"""Negation of oneOf, anyOf, if/then/else, items, prefixItems and dependencies: differential against
jsonschema."""

import json
import re
import sys

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

VALUES = [None, 0, 1, 2.5, "a", "ab", [], [1], ["a"], [1, "a"], ["a", "b"], {}, {"x": 1}, {"y": 1},
          {"x": 1, "y": 2}, {"x": "s"}, {"x": 2, "y": "s"}]

SCHEMAS = [
    {"not": {"minimum": 1}},  # other types satisfy a bound: they are not in its negation
    {"not": {"required": ["x"]}},
    {"not": {"type": "integer", "minimum": 1}},
    {"not": {"properties": {"x": {"type": "string"}}}},
    {"not": {"minLength": 2}},
    {"not": {"oneOf": [{"type": "integer"}, {"minimum": 1}]}},
    {"not": {"oneOf": [{"type": "string"}, {"type": "array"}]}},
    {"type": "array", "not": {"items": {"type": "integer"}}},
    {"oneOf": [{"not": {"required": ["x"]}}, {"dependencies": {"x": False}}]},
    {"type": "object", "not": {"dependentRequired": {"x": ["y"]}}},
    {"type": "object", "not": {"dependentSchemas": {"x": {"properties": {"x": {"type": "string"}}}}}},
    # anyOf next to other keywords (no branch holds), if/then/else (C and not T, or not C and not E)
    {"not": {"type": "object", "anyOf": [{"required": ["x"]}, {"required": ["y"]}]}},
    {"not": {"minProperties": 1, "anyOf": [{"required": ["x"]}, {"properties": {"y": {"type": "string"}}}]}},
    {"not": {"if": {"required": ["x"]}, "then": {"required": ["y"]},
             "else": {"properties": {"y": {"type": "string"}}}}},
    {"not": {"type": "object", "if": {"required": ["x"]}, "then": {"required": ["y"]}}},
    {"not": {"type": "object", "if": {"required": ["x"]}, "else": {"required": ["y"]}}},
    # prefixItems: some position the array reaches fails its prefix schema
    {"type": "array", "not": {"prefixItems": [{"type": "integer"}, {"type": "string"}]}},
    {"type": "array", "items": {"type": "string"}, "not": {"prefixItems": [{"const": "a"}]}},
    # patternProperties whose schemas allow every value: nothing violates them
    {"type": "object", "not": {"patternProperties": {"^x": {"description": "any"}}, "required": ["y"]}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:50] for s in SCHEMAS])
def test_negation_against_jsonschema(schema):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact", any_depth=2)), re.S)
    for v in VALUES:
        text = json.dumps(v, separators=(",", ":"))
        accepted = rx.fullmatch(text) is not None
        # `dependencies` is a draft-07 keyword (2020-12 ignores it; the compiler enforces it)
        cls = jsonschema.Draft7Validator if "dependencies" in schema.get("oneOf", [{}])[-1] else \
            jsonschema.Draft202012Validator
        valid = cls(schema).is_valid(v)
        assert not accepted or valid, f"accepted invalid {text}"
        assert accepted == valid, f"rejected valid {text}"


@pytest.mark.parametrize("schema,pointer", [
    ({"not": {"$ref": "#"}}, "/not"),
    ({"$defs": {"a": {"not": {"$ref": "#/$defs/b"}}, "b": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"},
     "/$defs/a/not"),
])
def test_a_negation_of_itself_is_refused_by_its_pointer_not_by_recursion_depth(schema, pointer):
    from deepinfer.constraints import ConstraintError, GrammarCompiler, Vocabulary

    compiler = GrammarCompiler(Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_ids=[256]))
    with pytest.raises(ConstraintError, match=re.escape(f"JSON Schema {pointer}: `not` is not enforced: a negation that refers")):
        compiler.compile_json_schema(schema)


def test_negated_pattern_properties_that_allow_every_value_are_exact_not_noted():
    schema = {"type": "object", "not": {"patternProperties": {"^x-": {"description": "any"}}, "required": ["a"]}}
    assert lower_json_schema(schema, whitespace="compact", any_depth=1).annotations == []
