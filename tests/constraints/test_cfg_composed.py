"""Lexeme DFAs composed from a shared head and rest (cfg/composed.py) accept exactly the
lexeme's language, give the same masks as fully determinized lexemes on the real DeepSeek-V4
vocabulary, and the `,` ws `"` key-trie and `"` key-trie lexemes of one object share one rest."""

from __future__ import annotations

import json

import pytest

from deepinfer.constraints import ir

from cfg_test_helpers import assert_same_masks_along, same_language
from deepinfer.constraints.cfg import composed as composition, heads, lexeme as lexeme_mod
from deepinfer.constraints.cfg.automaton import CfgAutomaton
from deepinfer.constraints.cfg.lexeme import Lexeme
from deepinfer.constraints.cfg.lexemes import Bnf
from deepinfer.constraints.regular.dfa import Limits, determinize
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.regular.nfa import build_nfa

# objects with optional properties and open keys: "any other key" tries after `{` and `,`
SCHEMAS = [
    ({"type": "object", "properties": {k: {"type": "string"} for k in
                                       ["path", "name", "pattern", "namespace", "version"]}},
     {"path": "a", "name": "b", "version": "1", "other": "c"}),
    ({"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {
        "type": "object", "properties": {"key": {"type": "string"}, "kind": {"type": "string"}}}}},
      "additionalProperties": {"type": "integer"}},
     {"id": 1, "tags": [{"key": "x", "zz": "q"}, {"kind": "k"}], "extra": 2}),
]


def _cfg(compiled) -> CfgAutomaton:
    automaton = getattr(compiled.automaton, "inner", compiled.automaton)
    if not isinstance(automaton, CfgAutomaton):
        pytest.skip("schema compiled to another back end")
    return automaton


@pytest.mark.parametrize("case", range(len(SCHEMAS)))
def test_composed_lexemes_equal_determinized(deepseek_compiler, case):
    automaton = _cfg(deepseek_compiler.compile_json_schema(SCHEMAS[case][0]))
    composed = literal_heads = 0
    for lx in automaton.lexemes:
        got = None if lx.nullable else composition.composed_dfa(lx.expr, Limits())
        if got is None:
            continue
        composed += 1
        literal_heads += all(isinstance(i, ir.Literal) for i in composition.split_parts(lx.expr)[0].items)
        dfa = determinize(build_nfa(lx.expr, 200_000), Limits())
        assert same_language(got[0], got[1], dfa.trans, dfa.accepting, got[3]), repr(lx.expr)[:200]
    assert composed >= 2 and literal_heads >= 1  # key lexemes `"name":` ws: a chain DFA head


def test_comma_and_first_key_tries_share_a_rest(deepseek_compiler):
    automaton = _cfg(deepseek_compiler.compile_json_schema(SCHEMAS[0][0]))
    splits = [composition.split_parts(lx.expr) for lx in automaton.lexemes]
    rests = {}
    for split in splits:
        if split is not None:
            first = split[0].items[0]
            rests.setdefault(split[1], set()).add(first.text if isinstance(first, ir.Literal) else "?")
    assert any({",", '"'} <= firsts for firsts in rests.values())


def _rebuilt(automaton: CfgAutomaton) -> CfgAutomaton:
    """The same grammar with fresh lexemes determinized whole (no composition)."""
    fresh = [Lexeme(lx.expr, None, Limits(), lx.first_bytes, lx.nullable, rules={}) if
             composition.split_parts(lx.expr) is not None else lx for lx in automaton.lexemes]
    bnf = automaton.bnf
    return CfgAutomaton(Bnf(bnf.names, bnf.productions, fresh), automaton.vocab)


@pytest.mark.parametrize("case", range(len(SCHEMAS)))
def test_composed_masks_equal_determinized_masks(deepseek_compiler, deepseek_vocab, deepseek_tokenizer,
                                                  monkeypatch, case):
    schema, instance = SCHEMAS[case]
    fast = _cfg(deepseek_compiler.compile_json_schema(schema))
    with monkeypatch.context() as patch:
        patch.setattr(lexeme_mod, "composed_dfa", lambda expr, limits: None)
        slow = _rebuilt(fast)
        for lx in slow.lexemes:
            lx.build()
    for lx in fast.lexemes:
        lx.build()
    assert any(a is not b and a.digest.startswith("parts:") for a, b in zip(fast.lexemes, slow.lexemes))
    ids = deepseek_tokenizer.encode(json.dumps(instance), add_special_tokens=False).ids
    assert_same_masks_along(fast, slow, ids, deepseek_vocab.words)


def test_compose_refuses_a_nondeterministic_join():
    head = determinize(build_nfa(ir.Seq((ir.Literal("a"), ir.Repeat(ir.Literal("b"), 0, None))), 100),
                       Limits())
    rest = determinize(build_nfa(ir.Literal("bc"), 100), Limits())
    assert composition.compose(head.trans, head.accepting, rest.trans, rest.accepting) is None
    rest = determinize(build_nfa(ir.Literal("cb"), 100), Limits())
    trans, accepting, _, start = composition.compose(head.trans, head.accepting, rest.trans, rest.accepting)
    whole = determinize(build_nfa(ir.Seq((ir.Literal("a"), ir.Repeat(ir.Literal("b"), 0, None),
                                          ir.Literal("cb"))), 100), Limits())
    assert same_language(trans, accepting, whole.trans, whole.accepting, start)


def test_shared_caches_are_bounded(monkeypatch):
    monkeypatch.setattr(composition, "MAX_KEPT_STATES", 10)
    composition.clear()
    for i in range(6):
        composition._rest_dfa(ir.Seq((ir.CharClass(((97, 122),)), ir.Literal(f"tail{i}"))), Limits())
        assert composition._kept[0] <= 10 or len(composition._rests) == 1
    assert len(composition._rests) < 6
    composition.clear()
    monkeypatch.setattr(heads, "_HEADS_MAX", 3)
    for i in range(5):
        heads.shared_head(ir.Literal(f"h{i}"))
        assert len(heads._HEADS) <= 3


def test_composed_digests_name_exactly_what_was_composed():
    """Digests are cache keys for token runs: two different composed tables must never share
    one (a wrong mask), equal inputs must (sharing)."""
    ws = ir.Repeat(ir.CharClass(((32, 32),)), 0, 3)
    rest = (ws, ir.Repeat(ir.CharClass(((97, 122),)), 1, 40), ir.Literal("!"))
    digests = {}
    for key in ['"a":', '"b":', '"ab":', '"a":|']:
        trans, _, digest, _ = composition.composed_dfa(ir.Seq((ir.Literal(key),) + rest), Limits())
        again = composition.composed_dfa(ir.Seq((ir.Literal(key),) + rest), Limits())[2]
        assert again == digest
        digests[digest] = trans.tobytes()
    assert len(digests) == 4
    other_rest = ir.Seq((ir.Literal('"a":'), ws, ir.Repeat(ir.CharClass(((97, 122),)), 1, 41), ir.Literal("!")))
    assert composition.composed_dfa(other_rest, Limits())[2] not in digests


def test_keys_composed_with_one_rest_share_its_runs_and_only_those():
    """rest_run_key: a state inside the rest names the rest's language (the same for every key
    composed with it, so runs are shared); head states and other rests do not."""
    ws = ir.Repeat(ir.CharClass(((32, 32),)), 0, 3)
    rest = (ws, ir.Repeat(ir.CharClass(((97, 122),)), 1, 40), ir.Literal("!"))
    built = [composition.composed_dfa(ir.Seq((ir.Literal(key),) + rest), Limits()) for key in ['"a":', '"bc":']]
    (trans_a, acc_a, digest_a, start_a), (trans_b, acc_b, digest_b, start_b) = built
    assert start_a == start_b  # the rest is laid out first: its states are 0 .. start - 1
    for q in range(start_a):
        key = composition.rest_run_key(digest_a, q)
        assert key == composition.rest_run_key(digest_b, q) and key[0] == "rest"
        assert (trans_a[q] == trans_b[q]).all() and acc_a[q] == acc_b[q]  # the same rows indeed
    for q in range(start_a, len(trans_a)):  # the heads differ: keyed by their own digest
        assert composition.rest_run_key(digest_a, q) is None
    other = composition.composed_dfa(ir.Seq((ir.Literal('"a":'), ws, ir.Repeat(ir.CharClass(((97, 122),)), 1, 41),
                                       ir.Literal("!"))), Limits())
    assert composition.rest_run_key(other[2], 0) != composition.rest_run_key(digest_a, 0)
    assert composition.rest_run_key("a1b2", 0) is None  # a determinized lexeme's digest


def test_a_rest_over_the_limits_fails_the_lexeme_at_once():
    # `"k":` then a rest whose DFA needs more states than allowed: the whole lexeme would meet
    # the same limit in its own subset construction (after as long again), so composing fails
    # with the rest's error instead of falling back to determinizing the whole
    rest = ir.seq(ir.CharClass.of([(97, 98)]), ir.repeat(ir.CharClass.of([(97, 98)]), 0, None),
                  ir.CharClass.of([(97, 97)]), ir.repeat(ir.CharClass.of([(97, 98)]), 12, 12))
    expr = ir.seq(ir.literal('"k":'), rest)
    composition.clear()
    with pytest.raises(ConstraintError, match="DFA states"):
        composition.composed_dfa(expr, Limits(max_nfa_states=10_000, max_dfa_states=500))
    with pytest.raises(ConstraintError, match="DFA states"):  # remembered: not built again
        composition.composed_dfa(ir.seq(ir.literal('"other":'), *expr.items[1:]),
                           Limits(max_nfa_states=10_000, max_dfa_states=500))
