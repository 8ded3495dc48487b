"""Schemas refused because an automaton would be too large name the keyword and its pointer."""

import re

import pytest

from deepinfer.constraints import GrammarCompiler, Limits
from deepinfer.constraints.errors import ConstraintError
from json_verdicts import BYTE_COMPILER as COMPILER

CASES = [
    ({"type": "integer", "multipleOf": 1e20}, "/multipleOf", "`multipleOf`"),
    ({"type": "string", "minLength": 100000}, "/minLength", "`minLength`"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^a{1000000}$"}}},
     "/properties/a/pattern", "`pattern`"),
    ({"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 123456789123}}},
     "/properties/a/multipleOf", "`multipleOf`"),
    ({"type": "string", "minLength": 100000, "pattern": "^[a-z]*$"}, "/minLength", "`minLength`"),
    # a negated count is named where it was written, not by the bound it becomes
    ({"not": {"minItems": 200000}}, "/not/minItems", "maxItems"),
    ({"type": "array", "not": {"maxItems": 200000}}, "/not/maxItems", "minItems"),
]


@pytest.mark.parametrize("schema,pointer,keyword", CASES)
def test_size_errors_name_the_keyword_and_where(schema, pointer, keyword):
    with pytest.raises(ConstraintError) as info:
        COMPILER.compile_json_schema(schema)
    message = str(info.value)
    assert message.startswith(f"JSON Schema {pointer}: "), message
    assert keyword in message


def _nested(depth: int) -> dict:
    value: dict = {"a": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("schema,where", [
    ({"type": "object", "properties": {"a": {"enum": ["x" * 300_000]}}}, "/properties/a/enum: `enum`"),
    ({"type": "object", "properties": {"k": {"const": _nested(500)}}}, "/properties/k/const: `const`"),
])
def test_an_enum_or_const_too_large_is_named_where_it_is(schema, where):
    with pytest.raises(ConstraintError, match=re.escape(f"JSON Schema {where} makes this value's automaton too large")) \
            as info:
        COMPILER.compile_json_schema(schema)
    assert info.value.limit


def test_a_limit_met_is_told_by_the_errors_reason_not_its_text():
    small = GrammarCompiler(COMPILER.vocab, limits=Limits(max_dfa_states=50))
    with pytest.raises(ConstraintError, match="exceeds 50 DFA states") as info:
        small.compile_regex("[a-z]{100}")
    assert info.value.limit
    with pytest.raises(ConstraintError) as info:  # not a limit: a malformed regex
        small.compile_regex("(")
    assert not info.value.limit and info.value.reason is None
