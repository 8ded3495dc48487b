"""The JSON Schema options generation turns on (GENERATION_JSON_OPTIONS): unknown `format`
values refused with their pointer (or skipped and reported under strict=False / ["format"]), and
digit-bounded numbers, checked against `jsonschema` and Python's json on sampled texts; a bare
GrammarCompiler keeps the standard reading (annotations, unbounded numbers)."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from deepinfer.constraints import GENERATION_JSON_OPTIONS, ConstraintError, GrammarCompiler, Matcher
from deepinfer.constraints.frontends.json.schema import lower_json_schema

KLINGON = {"type": "object", "properties": {"when": {"type": "string", "format": "klingon-date"}}}


def accepts(compiled, text: str) -> bool:
    m = Matcher(compiled)
    return m.accept_string(text) and m.is_completed()


def test_unknown_format_refused_with_its_pointer(tiny_vocab):
    compiler = GrammarCompiler(tiny_vocab, json_options=GENERATION_JSON_OPTIONS)
    with pytest.raises(ConstraintError, match=r"/properties/when/format.*unknown format 'klingon-date'"):
        compiler.compile_json_schema(KLINGON)
    for strict in (False, ["format"]):  # the documented non-strict skip: compiled, and reported
        compiled = compiler.compile_json_schema(KLINGON, strict=strict)
        assert any("skipped /properties/when/format" in note for note in compiled.annotations)
        assert accepts(compiled, '{"when": "any text"}')
    with pytest.raises(ConstraintError):  # skipping another keyword does not skip formats
        compiler.compile_json_schema(KLINGON, strict=["pattern"])
    # known formats are enforced as before
    compiled = compiler.compile_json_schema({"type": "string", "format": "date"})
    assert accepts(compiled, '"2024-03-15"') and not accepts(compiled, '"2024-13-15"')


def test_bare_compiler_reads_unknown_formats_as_annotations(tiny_vocab):
    compiled = GrammarCompiler(tiny_vocab).compile_json_schema(KLINGON)
    assert any("klingon-date" in note and "not enforced" in note for note in compiled.annotations)
    with pytest.raises(ConstraintError, match="unknown_formats"):
        lower_json_schema(KLINGON, unknown_formats="maybe")


def _number_texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        ip = rng.choice(["0", str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 22)))])
        text = ("-" if rng.random() < 0.3 else "") + ip
        if rng.random() < 0.5:
            text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22)))
        if rng.random() < 0.3:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 9999))
        out.append(text)
    return out


def _within(text: str, limit: int) -> bool:
    mantissa, _, exponent = text.lower().partition("e")
    ip, _, fp = mantissa.lstrip("-").partition(".")
    return len(ip) <= limit and len(fp) <= limit and len(exponent.lstrip("+-")) <= 3


@pytest.mark.parametrize("schema", [{"type": "number"}, {"type": "integer"},
                                    {"type": "number", "minimum": -5, "maximum": 1000},
                                    {"type": "integer", "exclusiveMinimum": 0},
                                    {"type": "array", "items": {}}])  # numbers inside any value too
def test_bounded_numbers_are_the_schema_language_within_the_digit_limit(tiny_vocab, schema):
    limit = 17
    compiler = GrammarCompiler(tiny_vocab)
    bounded = compiler.compile_json_schema(schema, number_digits=limit)
    unbounded = compiler.compile_json_schema(schema)
    rng = random.Random(7)
    checked = 0
    for number in _number_texts(rng, 400):
        text = f"[{number}]" if schema.get("type") == "array" else number
        valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
        in_grammar = accepts(unbounded, text)
        assert accepts(bounded, text) == (in_grammar and _within(number, limit)), text
        checked += valid
    assert checked > 20
    assert accepts(bounded, "[7]" if schema.get("type") == "array" else "7")


def test_a_run_of_zeros_ends_at_the_limit(tiny_vocab):
    compiled = GrammarCompiler(tiny_vocab, json_options=GENERATION_JSON_OPTIONS).compile_json_schema(
        {"type": "number"})
    assert accepts(compiled, "420." + "0" * 17)
    assert not Matcher(compiled).accept_string("420." + "0" * 18)


def test_bounds_beyond_the_limit_keep_the_schema_language_and_say_so(tiny_vocab):
    compiled = GrammarCompiler(tiny_vocab).compile_json_schema({"type": "integer", "minimum": 10**20},
                                                               number_digits=17)
    assert accepts(compiled, str(10**20))
    assert any("not digit-bounded" in note for note in compiled.annotations)
    with pytest.raises(ConstraintError, match="number_digits"):
        lower_json_schema({"type": "number"}, number_digits=0)
