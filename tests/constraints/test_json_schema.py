"""JSON Schema front end: keyword table, fail-closed errors, options.

Every row says which instances a schema must accept and reject; the row is
first checked against `jsonschema` (so the table itself cannot be wrong), then
against the lowered grammar with the reference IR matcher (json_match), which
needs no tokenizer. Real-matcher checks live in test_json_schema_matcher.py.
"""

from __future__ import annotations

import json

import pytest

from deepinfer.constraints import ConstraintError, ir
from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from json_table import check_table_row, dump

S = {"type": "string"}
I = {"type": "integer"}

# (schema, must accept, must reject)
TABLE = [
    (I, [0, 7, -12, 10**20], [1.5, "1", True, None]),
    ({"type": ["string", "null"]}, ["a", None], [1, False]),
    ({"type": "string", "nullable": True}, ["a"], [3, None]),  # OpenAPI's nullable: not JSON Schema
    ({"enum": ["a", 1, None, [1, 2], {"k": "v"}]}, ["a", 1, None, [1, 2], {"k": "v"}], ["b", 2, [2, 1], {}]),
    ({"const": {"a": [1, True]}}, [{"a": [1, True]}], [{"a": [1, False]}, {"a": [1]}]),
    ({"type": "integer", "minimum": -5, "exclusiveMaximum": 120}, [-5, 0, 119], [-6, 120, 121]),
    ({"type": "integer", "minimum": 3, "exclusiveMinimum": True, "maximum": 9,  # draft-04 booleans
      "$schema": "http://json-schema.org/draft-04/schema#"}, [4, 9], [3, 10]),
    ({"type": "integer", "multipleOf": 5, "minimum": 0}, [0, 5, 1000], [3, -5, 12]),
    ({"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 50}, [0, 7, 49], [8, 56]),
    ({"type": "number", "minimum": 0.5, "maximum": 2.25}, [0.5, 1, 2.25, 1.75], [0.49, 2.26, -1, 3]),
    ({"type": "number", "exclusiveMinimum": 0}, [0.001, 3, 1e-05, 2.5e+20], [0, -0.5, -1e-05]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "abc", "é\"x"], ["a", "abcd"]),
    ({"type": "string", "pattern": "^[a-z]+-\\d{2}$"}, ["ab-12"], ["Ab-12", "ab-123", "ab-1"]),
    ({"type": "string", "pattern": "x\\d"}, ["x1", "aax9bb"], ["x", "abc"]),  # search semantics
    ({"type": "string", "pattern": "^\"\\\\"}, ['"\\', '"\\abc'], ["\\", "a"]),  # escaping
    ({"type": "string", "pattern": "^[a-z]+$", "maxLength": 4}, ["abcd"], ["abcde", "ab1"]),
    ({"type": "string", "format": "date"}, ["2024-02-29", "2023-12-31"], ["2023-02-29", "2023-13-01", "x"]),
    ({"type": "string", "format": "date-time"}, ["2023-01-02T03:04:05Z", "2023-01-02T03:04:05.5+01:00"],
     ["2023-01-02 03:04:05", "2023-01-02T25:00:00Z"]),
    ({"type": "string", "format": "uuid"}, ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567"]),
    ({"type": "string", "format": "ipv4"}, ["10.0.0.255"], ["256.0.0.1", "1.2.3"]),
    ({"type": "string", "format": "email"}, ["a.b@example.com"], ["nope"]),
    ({"type": "object", "properties": {"a": I, "b": S}, "required": ["b"]},
     [{"b": "x"}, {"a": 1, "b": "x"}, {"b": "x", "z": [1]}], [{"a": 1}, {"a": "1", "b": "x"}, []]),
    ({"type": "object", "properties": {"a": I}, "additionalProperties": False},
     [{}, {"a": 1}], [{"b": 1}, {"a": 1, "b": 2}]),
    ({"type": "object", "properties": {"a": I}, "additionalProperties": S},
     [{"a": 1, "b": "x"}, {"c": "y"}], [{"b": 1}, {"a": 1, "a2": 2}]),
    ({"type": "object", "patternProperties": {"^x-": I}, "additionalProperties": False},
     [{"x-a": 1}, {}], [{"y": 1}, {"x-a": "s"}]),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}], [{"Ab": 1}, {"a1": 2}]),
    ({"type": "object", "properties": {"x-a": {"type": "number"}}, "patternProperties": {"^x-": I},
      "additionalProperties": False}, [{"x-a": 2, "x-b": 1}, {"x-b": 1}], [{"x-a": 2.5}, {"x-b": "s"}, {"y": 1}]),
    ({"type": "object", "minProperties": 1, "maxProperties": 2}, [{"a": 1}, {"a": 1, "b": 2}],
     [{}, {"a": 1, "b": 2, "c": 3}]),
    ({"type": "object", "properties": {"a": I, "b": I}, "minProperties": 2}, [{"a": 1, "b": 2}, {"a": 1, "c": 3}],
     [{"a": 1}, {}]),
    ({"type": "object", "properties": {"a": I, "b": I, "c": I}, "dependentRequired": {"a": ["b"]}},
     [{"a": 1, "b": 2}, {"c": 3}], [{"a": 1}, {"a": 1, "c": 2}]),
    ({"type": "object", "properties": {"a": I, "b": I}, "dependencies": {"a": ["b"]},
      "$schema": "http://json-schema.org/draft-07/schema#"}, [{"a": 1, "b": 2}],
     [{"a": 1}]),
    ({"type": "array", "items": I, "minItems": 1, "maxItems": 3}, [[1], [1, 2, 3]], [[], [1, 2, 3, 4], ["a"]]),
    ({"type": "array", "prefixItems": [S, I], "items": False}, [["a", 1], ["a"], []], [["a", 1, 2], [1]]),
    ({"type": "array", "items": [S, I], "additionalItems": {"type": "boolean"},  # draft-07 tuple form
      "$schema": "http://json-schema.org/draft-07/schema#"},
     [["a", 1, True]], [["a", 1, 2]]),
    ({"type": "array", "items": I, "contains": {"const": 5}}, [[5], [1, 5, 2]], [[], [1, 2]]),
    ({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True}, [["a", "c"], []],
     [["a", "a"], ["b", "c", "b"]]),
    ({"anyOf": [I, {"type": "string", "maxLength": 1}]}, [1, "a"], ["ab", None]),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [None, 1.5]),
    ({"oneOf": [{"type": "number", "minimum": 10}, {"type": "number", "maximum": 20}]}, [5, 25],
     [15, 10, 20]),
    ({"type": "object", "properties": {"a": I, "b": I},
      "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, [{"a": 1}, {"b": 2}], [{}, {"a": 1, "b": 2}]),
    ({"oneOf": [{"type": "object", "properties": {"k": {"const": "x"}, "v": I}, "required": ["k"]},
                {"type": "object", "properties": {"k": {"const": "y"}, "v": S}, "required": ["k"]}]},
     [{"k": "x", "v": 1}, {"k": "y", "v": "s"}], [{"k": "x", "v": "s"}, {"k": "z"}]),
    ({"allOf": [{"type": "object", "properties": {"a": I}, "additionalProperties": False},
                {"properties": {"b": I}}]}, [{"a": 1}, {}], [{"b": 1}]),
    ({"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 3}]}, [0, 3], [4, -1]),
    ({"not": {"type": "string"}}, [1, None, {}], ["a"]),
    ({"type": "object", "properties": {"a": I, "b": I}, "not": {"required": ["a", "b"]}},
     [{"a": 1}, {}], [{"a": 1, "b": 2}]),
    ({"type": "string", "not": {"enum": ["a", "b"]}}, ["c", "ab", ""], ["a", "b"]),
    ({"type": "object", "properties": {"t": S, "n": I},
      "if": {"properties": {"t": {"const": "num"}}}, "then": {"required": ["n"]}},
     [{"t": "num", "n": 1}, {"t": "str"}], [{"t": "num"}, {}]),  # absent t: `if` holds
    ({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}},
     [[1, 2]], [[0]]),
    ({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"type": "boolean"}}, "$ref": "#/definitions/a"},
     [True], [1]),
    ({"$id": "https://x.test/root.json", "$defs": {"s": {"$id": "s.json", "type": "string"}},
      "properties": {"v": {"$ref": "s.json"}}, "type": "object"}, [{"v": "a"}], [{"v": 1}]),
    ({"type": "object", "properties": {"a~b/c": I}, "required": ["a~b/c"],
      "additionalProperties": False}, [{"a~b/c": 1}], [{}]),
]


@pytest.mark.parametrize("schema,good,bad", TABLE, ids=[json.dumps(r[0])[:60] for r in TABLE])
def test_keyword_table(schema, good, bad):
    check_table_row(schema, good, bad)


def test_recursive_schema_becomes_rule_cycle():
    schema = {"$defs": {"node": {"type": "object", "properties": {"v": I, "kids": {
        "type": "array", "items": {"$ref": "#/$defs/node"}}}, "additionalProperties": False}},
        "$ref": "#/$defs/node"}
    grammar = lower_json_schema(schema)
    assert ir.is_recursive(grammar)
    assert matches(grammar, dump({"v": 1, "kids": [{"v": 2, "kids": [{"kids": []}]}]}))
    assert not matches(grammar, dump({"v": 1, "kids": [{"v": "x"}]}))


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}},
     "/properties/tags/uniqueItems"),
    ({"type": "string", "pattern": "(a)\\1"}, "/pattern"),
    ({"type": "number", "multipleOf": 0.1}, "/multipleOf"),
    ({"type": "array", "anyOf": [{"prefixItems": [{}]}], "unevaluatedItems": False}, "/unevaluatedItems"),
    ({"type": "object", "minProperties": 2}, "/minProperties"),  # {"x": 1, "x": 2} has one property
    ({"type": "string", "not": {"format": "email"}}, "/not/format"),
])
def test_unenforced_keyword_fails_closed(schema, pointer):
    with pytest.raises(ConstraintError) as info:
        lower_json_schema(schema)
    assert pointer in str(info.value)


def test_min_properties_never_counts_repeated_names():
    grammar = lower_json_schema({"type": "object", "properties": {"a": I}, "minProperties": 2})
    assert matches(grammar, '{"a": 1, "x": 2}')
    assert not matches(grammar, '{"x": 1, "x": 2}')  # parses to one property


def test_strict_false_skips_and_records():
    schema = {"type": "array", "items": {"type": "object"}, "uniqueItems": True}
    grammar = lower_json_schema(schema, strict=False)
    assert any("/uniqueItems" in note for note in grammar.annotations)
    named = lower_json_schema(schema, strict=["uniqueItems"])
    assert named.annotations
    with pytest.raises(ConstraintError):
        lower_json_schema({"type": "number", "multipleOf": 0.1}, strict=["uniqueItems"])


def test_unsatisfiable_schema_is_an_error():
    for schema in ({"type": "integer", "minimum": 5, "maximum": 4}, {"allOf": [I, S]}, False,
                   {"type": "object", "properties": {"a": False}, "required": ["a"]}):
        with pytest.raises(ConstraintError, match="unsatisfiable"):
            lower_json_schema(schema)


def test_unknown_format_is_an_annotation():
    grammar = lower_json_schema({"type": "string", "format": "x-color"})
    assert any("x-color" in note for note in grammar.annotations)
    assert matches(grammar, '"anything"')


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "string", "format": "x-color"}, "at /format "),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "x-color"}}}, "at /properties/a/format "),
    ({"type": "array", "items": {"type": "string", "format": "x-color"}}, "at /items/format "),
])
def test_annotations_name_the_keyword_by_its_json_pointer(schema, pointer):
    assert any(pointer in note for note in lower_json_schema(schema).annotations)


def test_inputs_json_text_and_pydantic():
    text = json.dumps({"type": "object", "properties": {"n": I}, "required": ["n"]})
    assert matches(lower_json_schema(text), '{"n": 3}')
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: float | None = None

    grammar = lower_json_schema(Point)
    assert matches(grammar, '{"x": 1, "y": 2.5}') and matches(grammar, '{"x": 1}')
    assert not matches(grammar, '{"y": 2.5}')


def test_whitespace_modes():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": I}}}
    pretty = json.dumps({"a": [1, 2]}, indent=2)
    default = lower_json_schema(schema)
    assert matches(default, '{"a": [1, 2]}') and matches(default, pretty)
    assert not matches(default, '{"a":' + " " * 40 + "[1]}")  # runs are bounded
    compact = lower_json_schema(schema, whitespace="compact")
    assert matches(compact, '{"a":[1,2]}') and not matches(compact, '{"a": [1, 2]}')
    unbounded = lower_json_schema(schema, whitespace="unbounded")
    assert matches(unbounded, '{"a":' + " " * 40 + "[1]}")


def test_grammar_prints_as_ebnf():
    grammar = lower_json_schema({"type": "object", "properties": {"a": {"enum": ["x", "y"]}},
                                 "required": ["a"], "additionalProperties": False}, whitespace="compact")
    assert str(grammar) == 'start ::= "{\\"a\\":" ("\\"x\\"" | "\\"y\\"") "}"'
    assert isinstance(grammar, ir.Grammar)


def _accepts(compiled, tokenizer, text: str) -> bool:
    from deepinfer.constraints import Matcher, allocate_token_bitmask

    vocab = compiled.vocab
    bitmask = allocate_token_bitmask(1, vocab.size)
    row = bitmask.numpy()[0]
    m = Matcher(compiled)
    for tok in tokenizer.encode(text, add_special_tokens=False).ids:
        m.fill_next_token_bitmask(bitmask, 0)
        if not (int(row[tok >> 5]) >> (tok & 31)) & 1 or not m.accept_token(tok):
            return False
    m.fill_next_token_bitmask(bitmask, 0)
    eos = min(vocab.eos_ids)
    return bool((int(row[eos >> 5]) >> (eos & 31)) & 1)


@pytest.mark.parametrize("schema,back_end,good,bad", [
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"],
      "additionalProperties": False}, "dfa", [{"n": 12}], [{"n": 0}, {}]),
    ({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}, "cfg",
     [{"tags": ["a"], "extra": {"deep": [[1]]}}], [{"tags": [1]}]),
])
def test_compiler_back_end_choice(tiny_compiler, tiny_tokenizer, schema, back_end, good, bad):
    compiled = tiny_compiler.compile_json_schema(schema)
    assert compiled.stats["back_end"] == back_end
    for value in good:
        assert _accepts(compiled, tiny_tokenizer, dump(value))
    for value in bad:
        assert not _accepts(compiled, tiny_tokenizer, dump(value))
