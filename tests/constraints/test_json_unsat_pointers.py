"""An unsatisfiable schema's error names the sub-schema it comes from (a JSON pointer)."""

import re

import pytest

from deepinfer.constraints.errors import ConstraintError
from json_verdicts import BYTE_COMPILER as COMPILER

EMPTY_INT = {"type": "integer", "minimum": 5, "maximum": 1}

CASES = [
    (False, "/"),
    ({"type": "string", "minLength": 5, "maxLength": 2}, "/"),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": EMPTY_INT},
      "required": ["a", "b"]}, "/properties/b"),
    # an optional member nothing fits is simply never written: not the cause
    ({"type": "object", "properties": {"b": EMPTY_INT, "c": False}, "required": ["c"]}, "/properties/c"),
    ({"type": "object", "properties": {"b": EMPTY_INT}, "additionalProperties": False,
      "required": ["z"]}, "/additionalProperties"),  # z is required, and no undeclared member may be
    ({"$defs": {"x": {"enum": [1], "type": "string"}}, "type": "object",
      "properties": {"p": {"$ref": "#/$defs/x"}, "q": {"$ref": "#/$defs/x"}}, "required": ["q"]},
     "/$defs/x"),
    ({"anyOf": [{"type": "string", "minLength": 3, "maxLength": 1}, EMPTY_INT]}, "/anyOf"),
    ({"type": "array", "items": {"type": "string", "pattern": "^a$", "minLength": 2}, "minItems": 1},
     "/items"),
    ({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"not": {}}},
                                             "required": ["b"]}}, "required": ["a"]},
     "/properties/a/properties/b"),
]


@pytest.mark.parametrize("schema,pointer", CASES)
def test_unsatisfiable_error_names_the_sub_schema(schema, pointer):
    with pytest.raises(ConstraintError, match="unsatisfiable") as info:
        COMPILER.compile_json_schema(schema)
    assert str(info.value).startswith(f"JSON Schema {pointer}: ")


def test_a_satisfiable_schema_with_empty_optional_parts_compiles():
    schema = {"type": "object", "properties": {"b": EMPTY_INT, "c": {"anyOf": [False, {"type": "null"}]}}}
    COMPILER.compile_json_schema(schema)


@pytest.mark.parametrize("schema,pointer", [
    ({"$ref": "#"}, "/"),
    ({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]}, "/"),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "/$defs/a"),
    ({"type": "array", "minItems": 1, "items": {"$ref": "#"}}, "/"),
])
def test_a_ref_cycle_without_a_base_case_is_unsatisfiable_where_it_runs(schema, pointer):
    """It used to reach the context-free back end and fail there as "the grammar's language is
    empty", with no location."""
    with pytest.raises(ConstraintError, match=re.escape(f"JSON Schema {pointer}: unsatisfiable: every instance "
                                                        "would have to contain itself")):
        COMPILER.compile_json_schema(schema)
