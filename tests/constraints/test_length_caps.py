"""Long maxLength counted by the matcher (length_caps.py, json_caps.py): exact at the
boundary for every kind of character, exact masks on multi-byte tokens, and caps only
where no other sub-schema could need a longer or patterned string."""

import json
import random

import numpy as np
import pytest

from deepinfer.constraints import GrammarCompiler, Vocabulary
from deepinfer.constraints.frontends.json.caps import CAP_NOTE
from deepinfer.constraints.frontends.json.length_caps import LengthCapAutomaton
from json_verdicts import BYTE_COMPILER, accepts, valid, validator

CAP = 150
OBJ = {"type": "object", "properties": {"d": {"type": "string", "maxLength": CAP}}, "required": ["d"]}


def _capped(schema, compiler=BYTE_COMPILER) -> bool:
    compiled = compiler.compile_json_schema(schema)
    return any(n.startswith(CAP_NOTE) for n in compiled.grammar.annotations)


@pytest.mark.parametrize("char", ["a", "é", "€", "😀", "\\n", "\\\"", "\\u00e9", "\\/"])
@pytest.mark.parametrize("count", [CAP - 1, CAP, CAP + 1])
def test_accepts_exactly_up_to_the_cap(char, count):
    text = json.dumps({"d": "x"}).replace("x", char * count)
    assert accepts(OBJ, text) == valid(OBJ, text) == (count <= CAP)


@pytest.mark.parametrize("schema", [
    OBJ,
    {"type": "array", "items": {"type": "string", "maxLength": 200, "minLength": 3}},
    {"$defs": {"t": {"type": "string", "maxLength": 300}}, "type": "object",
     "additionalProperties": {"$ref": "#/$defs/t"}},
    {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 5000}]},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {
        "b": {"type": ["string", "null"], "maxLength": 10000}}}}}},
    {"allOf": [{"type": "string", "maxLength": 500}, {"maxLength": 300}]},
])
def test_long_max_lengths_are_capped(schema):
    assert _capped(schema)


@pytest.mark.parametrize("schema", [
    # another sub-schema at the same place needs a patterned or long string: the grammar counts
    {"anyOf": [{"type": "string", "maxLength": 300}, {"type": "string", "pattern": "^a+b$"}]},
    {"anyOf": [{"type": "string", "maxLength": 300}, {"type": "string", "minLength": 200}]},
    {"type": "string", "maxLength": 300, "format": "email"},
    # the lowering negates these: a negated maxLength is a minimum a cap would undercut
    {"if": {"type": "string", "maxLength": 300}, "then": {"minLength": 2}, "else": {"maxLength": 400}},
    {"oneOf": [{"type": "string", "maxLength": 300}, {"type": "integer"}]},
    {"not": {"type": "string", "minLength": 300}},
])
def test_caps_only_where_nothing_else_shapes_the_string(schema):
    assert not _capped(schema)


_Z = {"type": "string", "maxLength": 300}  # a capped string elsewhere: the wrapper is on


@pytest.mark.parametrize("schema,prefix", [
    # what encloses the string constrains it too (found by an adversarial review: each was
    # capped at 200 and generation was stranded after 200 characters)
    ({"type": "object", "properties": {"a": {"type": "string"}, "z": _Z}, "required": ["a"],
      "not": {"properties": {"a": {"maxLength": 200}}}}, '{"a": "'),
    ({"type": "object", "properties": {"a": {"type": "string"}, "z": _Z}, "required": ["a"],
      "if": {"properties": {"a": {"maxLength": 200}}}, "then": False}, '{"a": "'),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
      "oneOf": [{"properties": {"a": {"maxLength": 200}}}, {"required": ["a"]}]}, '{"a": "'),
    ({"anyOf": [{"type": "array", "items": {"type": "string", "maxLength": 200}},
                {"const": [1, "x" * 300]}]}, '[1, "'),
    ({"type": "object", "properties": {"z": _Z, "c": {"type": "array", "contains": {
        "type": "string", "maxLength": 200}, "const": ["x" * 300, "y"]}}}, '{"c": ["'),
])
def test_no_cap_strands_a_string_its_enclosing_value_needs_longer(schema, prefix):
    automaton = BYTE_COMPILER.compile_json_schema(schema).automaton
    state = automaton.initial_state()
    for b in (prefix + "x" * 200).encode():
        state = automaton.next_state(state, b)
    row = np.zeros(automaton.vocab.words, dtype=np.int32)
    automaton.fill_mask(state, row)
    assert row.any()


def test_a_maxlength_the_grammar_cannot_hold_compiles_when_capped():
    schema = {"type": "object", "properties": {"description": {"type": "string", "maxLength": 32767}}}
    text = json.dumps({"description": "é" * 40_000})
    assert not accepts(schema, text) and not valid(schema, text)
    text = json.dumps({"description": "é" * 32_767})
    assert accepts(schema, text) and valid(schema, text)


# tokens of several characters, escapes split across tokens, and multi-byte UTF-8 split too
_PIECES = [b'{"d": "', b'"}', b'"', b"a", b"aa", b"aaaa", b"a" * 9, b"\xc3\xa9", b"\xc3", b"\xa9",
           b"\xe2\x82\xac", b"\\", b"\\n", b"\\u", b"00", b"e9", b"\\u00e9", b"a\\", b'a"}', b"aaa\"}",
           b"\xf0\x9f\x98\x80", b"n", b"u", b"}"]


def test_masks_are_exact_on_multi_character_tokens():
    vocab = Vocabulary.from_token_bytes(_PIECES + [None], eos_ids=[len(_PIECES)])
    compiled = GrammarCompiler(vocab).compile_json_schema(OBJ)
    assert isinstance(compiled.automaton, LengthCapAutomaton)
    automaton = compiled.automaton
    rng = random.Random(0)
    for _ in range(40):
        state, out = automaton.initial_state(), b""
        while True:
            row = _row(automaton, state, vocab)
            allowed = [t for t in range(len(_PIECES)) if row[t]]
            for t in range(len(_PIECES)):  # a bit is set exactly when the token can be taken
                assert row[t] == (automaton.next_state(state, t) is not None), (out, _PIECES[t])
            if automaton.is_accepting(state) and (not allowed or rng.random() < 0.3):
                break
            assert allowed, out  # never stranded
            # mostly long string content, so that walks reach the cap
            content = [t for t in allowed if _PIECES[t] not in (b'"', b'"}', b'a"}', b'aaa"}')]
            tok = rng.choice(content if content and rng.random() < 0.97 else allowed)
            state, out = automaton.next_state(state, tok), out + _PIECES[tok]
        assert validator(OBJ).is_valid(json.loads(out))


def _row(automaton, state, vocab):
    words = np.zeros(vocab.words, dtype=np.int32)
    automaton.fill_mask(state, words)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return [bool(bits[t]) for t in range(vocab.size)]


def test_a_token_longer_than_a_cap_is_refused_where_it_would_overrun_a_new_string():
    schema = {"type": "array", "items": {"type": "string", "maxLength": 130}}
    pieces = [b'["' + b"a" * 135, b'["' + b"a" * 120, b"[", b'"', b'"' + b"a" * 140, b"a", b'"]', b"]", b","]
    vocab = Vocabulary.from_token_bytes(pieces + [None], eos_ids=[len(pieces)])
    automaton = GrammarCompiler(vocab).compile_json_schema(schema).automaton
    state = automaton.initial_state()
    for tok in (None, 2):  # at the start, then after "["
        if tok is not None:
            state = automaton.next_state(state, tok)
        row = _row(automaton, state, vocab)
        for t in range(len(pieces)):
            assert row[t] == (automaton.next_state(state, t) is not None), pieces[t][:10]
    assert not row[4] and _row(automaton, automaton.initial_state(), vocab)[1]


def _count_reference(data: bytes, escape: int) -> int:
    count = 0
    for c in data:
        if escape == 0:
            if c == 0x22:
                break
            count += c & 0xC0 != 0x80  # a backslash starts one character too
            escape = 1 if c == 0x5C else 0
        elif escape == 1:
            escape = 2 if c == ord("u") else 0
        else:
            escape = escape + 1 if escape < 5 else 0
    return count


@pytest.mark.parametrize("escape", range(6))
def test_vectorized_character_counts_match_a_byte_loop(escape):
    from deepinfer.constraints.frontends.json.length_caps import char_counts

    rng = random.Random(escape)
    alphabet = b'ab"\\u0e9\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80'
    tokens = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    width = max(map(len, tokens))
    columns = np.zeros((width, len(tokens)), dtype=np.uint8)
    for i, t in enumerate(tokens):
        columns[: len(t), i] = list(t)
    lengths = np.array([len(t) for t in tokens], dtype=np.int32)
    assert char_counts(columns, lengths, escape).tolist() == [_count_reference(t, escape) for t in tokens]


def test_too_many_contexts_means_no_caps_not_a_slow_compile():
    from deepinfer.constraints.frontends.json.caps import MAX_CONTEXTS, capped_nodes

    props = {f"p{i}": {"type": "string", "maxLength": 200} for i in range(MAX_CONTEXTS + 10)}
    assert capped_nodes({"type": "object", "properties": props}) == set()
    assert capped_nodes({"type": "object", "properties": dict(list(props.items())[:10])})
