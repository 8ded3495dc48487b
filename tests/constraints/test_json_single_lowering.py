"""JSON Schemas are lowered once (split): `unsplit` of that grammar is the plain lowering's
language (equal minimal DFAs), and compile_json_schema lowers a recursive schema only once."""

import pytest

from deepinfer.constraints import GrammarCompiler, Vocabulary, ir
from deepinfer.constraints import backends
from deepinfer.constraints.ir import is_recursive
from deepinfer.constraints.frontends.json import lowered
from deepinfer.constraints.frontends.json.schema import lower_json_schema, unsplit

def _vocab() -> Vocabulary:
    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_ids=[256])


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 40},
                                      "b": {"enum": ["x", "y", None]}},
     "required": ["a"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
    {"anyOf": [{"type": "boolean"}, {"type": "object", "properties": {"k": {"type": "number"}},
                                     "additionalProperties": False}]},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_unsplit_is_the_plain_language(schema):
    compiler = GrammarCompiler(_vocab())
    split = lower_json_schema(schema, split=True)
    assert is_recursive(split)  # the dead alternatives make every sub-schema non-regular
    plain = unsplit(split)
    assert not is_recursive(plain)
    assert all("unproductive" not in ir.to_ebnf(body) for body in plain.rules.values())
    assert compiler.build_dfa(plain).digest == compiler.build_dfa(lower_json_schema(schema)).digest


def test_recursive_schema_is_lowered_once(monkeypatch):
    calls = []
    real = lowered.lower_json_schema
    monkeypatch.setattr(lowered, "lower_json_schema", lambda *a, **k: calls.append(k) or real(*a, **k))
    compiled = GrammarCompiler(_vocab()).compile_json_schema(
        {"type": "object", "properties": {"n": {"type": "integer"}}})
    assert compiled.stats["back_end"] == "cfg"
    assert len(calls) == 1 and calls[0]["split"] is True


def _accepts(compiled, text: str) -> bool:
    from deepinfer.constraints import Matcher

    matcher = Matcher(compiled)
    return all(matcher.accept_token(b) for b in text.encode()) and matcher.is_completed()


def test_larger_regular_schema_goes_to_the_cfg_back_end():
    props = {f"field_{i}": {"type": "string", "maxLength": 5} for i in range(12)}
    schema = {"type": "object", "properties": props, "required": ["field_0"], "additionalProperties": False}
    plain = unsplit(lower_json_schema(schema, split=True))
    assert not is_recursive(plain)
    assert backends.nfa_states(plain) > backends.DFA_FIRST_MAX_NFA_STATES
    compiled = GrammarCompiler(_vocab()).compile_json_schema(schema)
    assert compiled.stats["back_end"] == "cfg"
    assert _accepts(compiled, '{"field_0": "ab", "field_3": ""}')
    assert not _accepts(compiled, '{"field_0": "abcdef"}')
    assert not _accepts(compiled, '{"field_1": "a"}')
    assert not _accepts(compiled, '{"field_0": "a", "other": 1}')
