"""distinct_items: every array sub-schema gets uniqueItems (through $defs, properties, items,
combinators), nothing else changes, and the compiled rewrite refuses an item written twice while
accepting what the original accepts without repeats (checked with jsonschema)."""

from __future__ import annotations

import json

import jsonschema

from deepinfer.constraints import GrammarCompiler, Matcher, distinct_items

SCHEMA = {"$defs": {"tags": {"type": "array", "items": {"type": "string"}}},
          "type": "object", "properties": {
              "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
              "tags": {"$ref": "#/$defs/tags"},
              "either": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
              "kept": {"type": "array", "uniqueItems": False},
              "name": {"type": "string"}}}


def test_every_array_and_only_arrays_are_marked():
    out = distinct_items(SCHEMA)
    assert out["$defs"]["tags"]["uniqueItems"] is True
    assert out["properties"]["items"]["uniqueItems"] is True
    assert out["properties"]["either"]["anyOf"][0]["uniqueItems"] is True
    assert "uniqueItems" not in out["properties"]["either"]["anyOf"][1]
    assert out["properties"]["kept"]["uniqueItems"] is False  # an explicit choice is left alone
    assert "uniqueItems" not in out["properties"]["name"] and "uniqueItems" not in out
    assert "uniqueItems" not in SCHEMA["$defs"]["tags"]  # a copy


def test_compiled_rewrite_refuses_repeats_and_keeps_the_rest(tiny_vocab):
    compiled = GrammarCompiler(tiny_vocab).compile_json_schema(distinct_items(SCHEMA), whitespace="compact")
    cases = [{"items": [{"n": 1}, {"n": 2}], "tags": ["a", "b"]}, {"items": [{"n": 1}, {"n": 1}]},
             {"tags": ["x", "x"]}, {"either": [3, 4, 3]}, {"either": None, "name": "z"}]
    for value in cases:
        text = json.dumps(value, separators=(",", ":"))
        m = Matcher(compiled)
        accepted = m.accept_string(text) and m.is_completed()
        assert jsonschema.validate(value, SCHEMA) is None  # every case is valid against the original
        assert accepted == jsonschema.Draft202012Validator(distinct_items(SCHEMA)).is_valid(value), text
