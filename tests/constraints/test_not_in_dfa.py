"""cfg/not_in_dfa.py: the "any other key" rest DFA assembled from the names has exactly the
language of the subset construction of the same expression."""

from __future__ import annotations

import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg import not_in_dfa
from deepinfer.constraints.cfg.not_in_dfa import not_in_rest_dfa
from deepinfer.constraints.regular.dfa import Limits, determinize
from deepinfer.constraints.frontends.json.not_in import encoded_not_in
from deepinfer.constraints.frontends.json.text import Whitespace
from deepinfer.constraints.regular.nfa import build_nfa

from cfg_test_helpers import same_language

WORDS = [
    ["ab", "cd"],
    ["a", "ab", "abc"],                                   # names that are prefixes of names
    ['k"q', "a/b", "t\tb", "é", "年", "nam\u00e9", "k\\z", "\x01", "x\x1f"],  # escapes, UTF-8
    ["\u00e9t\u00e9", "\u00e8re", "\U0001f600", "e"],     # shared UTF-8 lead bytes, 4-byte
    [f"key{i}" for i in range(60)],
]


def _tails():
    ws = Whitespace("default")
    return [ir.seq(ir.literal('"'), ws.colon), ir.literal('"'),
            ir.seq(ir.literal('":'), ir.repeat(ir.CharClass.of([(48, 57)]), 1, 3))]


@pytest.mark.parametrize("words", WORDS)
def test_direct_rest_dfa_has_the_subset_constructions_language(words):
    for tail in _tails():
        rest = ir.seq(encoded_not_in(words), tail)
        got = not_in_rest_dfa(rest, Limits())
        assert got is not None, (words, tail)
        trans, accepting = got
        want = determinize(build_nfa(rest), Limits())
        assert same_language(trans, accepting, want.trans, want.accepting), (words, tail)
        assert ((trans >= 0).any(axis=1) | accepting).all()  # trimmed: no dead-end state


def test_direct_rest_dfa_declines_what_it_cannot_build():
    ws = Whitespace("default")
    assert not_in_rest_dfa(ir.seq(ir.literal('"'), ws.colon), Limits()) is None  # no names
    # a tail whose first byte could also start a character of the name
    assert not_in_rest_dfa(ir.seq(encoded_not_in(["ab"]), ir.literal("x")), Limits()) is None
    # over the DFA-state limit: the subset construction reports the error as before
    rest = ir.seq(encoded_not_in([f"k{i}" for i in range(50)]), ir.literal('"'))
    assert not_in_rest_dfa(rest, Limits(max_dfa_states=10)) is None


def test_a_broken_spelling_table_is_caught(monkeypatch):
    """The language check above can fail: a missing escape spelling changes the language."""
    monkeypatch.setattr(not_in_dfa, "_SPELLINGS", {'"': (b'\\"',)})
    rest = ir.seq(encoded_not_in(['k"q']), ir.literal('"'))
    trans, accepting = not_in_rest_dfa(rest, Limits())
    want = determinize(build_nfa(rest), Limits())
    assert not same_language(trans, accepting, want.trans, want.accepting)
