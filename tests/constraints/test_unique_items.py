"""uniqueItems enforced by the matcher (constraints/unique.py + frontends/json_unique.py).

Differential against jsonschema on a table of instances, and the wrapper's masks checked
against its own next_state on every prefix (the mask holds exactly the tokens it accepts).
"""

import json

import jsonschema
import numpy as np
import pytest

from deepinfer.constraints.frontends.json.unique_tracker import UniqueItemsAutomaton, canonical

SCHEMAS = [
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True},
     [["a", "b"], [], ["ab", "a"]], [["a", "a"], ["x", "y", "x"], ["a", "\\u0061"]]),
    ({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True,
                                                "items": {"type": "object"}}}},
     [{"tags": [{"a": 1}, {"a": 2}]}, {"tags": [{"a": 1, "b": 2}, {"b": 2}]}],
     [{"tags": [{"a": 1}, {"a": 1}]}, {"tags": [{"a": 1, "b": [1]}, {"b": [1], "a": 1.0}]}]),
    ({"$defs": {"u": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
      "type": "array", "items": {"$ref": "#/$defs/u"}},
     [[[1, 2], [1, 2]], [[10, 1]]], [[[1, 1]], [[3], [2, 5, 2]]]),
    ({"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}, "uniqueItems": True},
     [[[True], [True, True], []]], [[[True], [True]], [[], []]]),
    # escapes inside items and keys (a string's plain bytes are tracked in runs, unique._scan)
    ({"type": "array", "items": {"type": ["string", "object"]}, "uniqueItems": True},
     [['a"b', 'a"c'], ["x\\y", "x\\z", "xy"], [{'k"1': 1}, {'k"2': 1}], ["long plain text", "long plain"],
      ["the cat", "the car"], ["information", "informative"], ["in", "io"], [{"in": 1}, {"io": 1}]],
     [['a"b', 'a"b'], ["x\\y", "x\\y"], [{'k"1': 1}, {'k"1': 1}], ["long plain text", "long plain text"]]),
]


def _text(value) -> str:
    return json.dumps(value, ensure_ascii=False).replace("\\\\u0061", "\\u0061")


def _tokens_allowed(row, n):
    return np.unpackbits(row.view(np.uint8), bitorder="little")[:n].astype(bool)


@pytest.mark.parametrize("schema,good,bad", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_unique_items_differential(tiny_compiler, tiny_tokenizer, schema, good, bad):
    compiled = tiny_compiler.compile_json_schema(schema)
    automaton = compiled.automaton
    assert isinstance(automaton, UniqueItemsAutomaton)
    vocab = compiled.vocab
    text_ids = [t for t in range(vocab.size) if vocab.token_bytes[t] is not None]
    for value, expect in [(v, True) for v in good] + [(v, False) for v in bad]:
        text = _text(value)
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)) == expect, text
        state, accepted = automaton.initial_state(), True
        for tok in tiny_tokenizer.encode(text, add_special_tokens=False).ids:
            row = np.zeros(vocab.words, dtype=np.int32)
            automaton.fill_mask(state, row)
            allowed = _tokens_allowed(row, vocab.size)
            for t in text_ids:  # the mask is exactly the set of tokens next_state takes
                assert allowed[t] == (automaton.next_state(state, t) is not None), (text, t)
            state = automaton.next_state(state, tok)
            if state is None:
                accepted = False
                break
        accepted = accepted and automaton.is_accepting(state)
        assert accepted == expect, text


def test_canonical_equality_is_json_schema_equality():
    assert canonical(1) == canonical(1.0)
    assert canonical(True) != canonical(1)
    assert canonical({"a": 1, "b": [2]}) == canonical({"b": [2.0], "a": 1})
    assert canonical(10**20) == canonical(1e20)
    assert canonical("1") != canonical(1)


def test_without_matcher_lowering_still_fails_closed():
    from deepinfer.constraints.errors import ConstraintError
    from deepinfer.constraints.frontends.json.schema import lower_json_schema

    with pytest.raises(ConstraintError, match="/uniqueItems"):
        lower_json_schema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})


# arrays that must be distinct next to ones that need not be, at every nesting: the masks of
# the value positions are the same with the opening-token shortcut (unique._opens_unique) and
# without it (every opening token scanned), and every opening token's verdict is next_state's
NESTED = {"type": "object", "properties": {
    "plain": {"type": "array", "items": {"type": "integer"}},
    "distinct": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    "rows": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
    "words": {"type": "array", "items": {"type": ["string", "boolean"]}}}}


@pytest.mark.parametrize("value", [
    {"plain": [1, 1], "distinct": [1, 2], "rows": [[1, 2], [1, 2]], "words": ["a", "a", True, True]},
    {"plain": [], "rows": [[3], [4, 5]], "words": []},
])
def test_opening_shortcut_keeps_masks(deepseek_compiler, deepseek_vocab, value, monkeypatch):
    automaton = deepseek_compiler.compile_json_schema(NESTED).automaton
    assert isinstance(automaton, UniqueItemsAutomaton)
    vocab = deepseek_vocab
    opens = automaton._opens_ids
    text = json.dumps(value).encode()
    state, checked = automaton.initial_state(), 0
    for k in range(len(text) + 1):
        if automaton._opens_unique(state[1]) is False and k < len(text):
            fast = np.zeros(vocab.words, dtype=np.int32)
            automaton.fill_mask(state, fast)
            with monkeypatch.context() as patched:
                patched.setattr(UniqueItemsAutomaton, "_opens_unique", lambda self, tracker: True)
                slow = np.zeros(vocab.words, dtype=np.int32)
                automaton.fill_mask(state, slow)
            assert np.array_equal(fast, slow), text[:k]
            allowed = _tokens_allowed(fast, vocab.size)
            for t in opens.tolist():
                assert allowed[t] == (automaton.next_state(state, t) is not None), (text[:k], vocab.token_bytes[t])
            checked += 1
        if k < len(text):
            state = automaton.advance_bytes(state, text[k:k + 1])
            assert state is not None, text[:k + 1]
    assert checked > 10


@pytest.mark.parametrize("data, simple", [
    (b" [1,1]", True), (b"[1,1", True), (b'["a","a"],', True), (b"\n  [true,true", True),
    (b"[[1,1", False), (b"[1,[1", False), (b'[{"a":1},', False), (b"1,[1,1", False), (b"", False),
])
def test_which_opening_tokens_take_the_shortcut(data, simple):
    from deepinfer.constraints.frontends.json.unique_tokens import opens_one_array as _opens_one_array

    assert _opens_one_array(data) is simple
