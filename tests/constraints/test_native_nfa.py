"""The compiled Thompson construction (native_nfa.py) makes nfa.build_nfa's NFA exactly: the
same states, epsilon moves and byte edges in the same order, the same errors (undefined and
recursive rules, the state limit at the same size), and determinize_expr the same DFA as the
Python NFA gives, with or without the kernels."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ConstraintError, ir
from deepinfer.constraints.regular import dfa, native_nfa, native_subset
from deepinfer.constraints.regular.dfa_ops import expr_dfa
from deepinfer.constraints.frontends.regex import parse_regex
from deepinfer.constraints.regular.json_strings import encode_expr
from deepinfer.constraints.regular.nfa import build_nfa

pytestmark = pytest.mark.skipif(native_nfa._library() is None, reason="no C compiler here")

PATTERNS = [
    r'"([^"\\]|\\.){0,40}"', r"[a-z]+@[a-z]+\.(com|org)", r"(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}",
    r'"(foo|bar|baz|qux)"', r".{0,120}x", r"[\u4e00-\u9fff]{2,5}", r"(a|b)*abb(a|b){3}", r" {0,100}",
    r"a{70}", r"(x|xy|xyz)*(yz|z)?", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", r"[^\x00-\x1f]*é",
    r"", r"a{0}", r"(ab){0}c", r"(a{0,3}b{2}){1,4}", r"[\u0080-\U0010ffff]+", r"(é|ü|\U0001F600){2,}",
]


def _same(expr_or_grammar, max_states=200_000):
    want = build_nfa(expr_or_grammar, max_states)
    tables = native_nfa.nfa_tables(expr_or_grammar, max_states)
    got = tables.to_nfa(max_states)
    assert (got.start, got.accept, len(got.eps)) == (want.start, want.accept, len(want.eps))
    assert got.eps == want.eps
    assert got.edges == [[tuple(e) for e in edges] for edges in want.edges]
    assert tables.states == len(want.eps)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_nfa_as_the_python_construction(pattern):
    _same(parse_regex(pattern))


@pytest.mark.parametrize("pattern", PATTERNS[:8])
def test_same_nfa_for_json_string_text(pattern):
    _same(encode_expr(parse_regex(pattern)))  # escapes, the JSON string body's classes


def test_rules_are_inlined_and_byte_dfa_leaves_embedded():
    leaf = expr_dfa(parse_regex(r"[a-c]{2,4}x|y+"))
    dfa_leaf = ir.ByteDfa(leaf.trans, leaf.accepting, leaf.digest)
    rules = {
        "start": ir.Seq((ir.RuleRef("word"), ir.Literal("="), ir.RuleRef("word"), dfa_leaf)),
        "word": ir.Repeat(ir.Alt((ir.RuleRef("letter"), ir.Literal("_"))), 1, 5),
        "letter": ir.CharClass(((97, 122), (0x4e00, 0x4e0f))),
    }
    _same(ir.Grammar(rules, "start"))
    _same(ir.Repeat(dfa_leaf, 0, 3))


@pytest.mark.parametrize("rules, message", [
    ({"start": ir.RuleRef("missing")}, "undefined rule 'missing'"),
    ({"start": ir.Seq((ir.Literal("a"), ir.RuleRef("start")))}, "rule 'start' is recursive"),
])
def test_rule_errors_match(rules, message):
    grammar = ir.Grammar(rules, "start")
    with pytest.raises(ConstraintError, match=message):
        build_nfa(grammar)
    with pytest.raises(ConstraintError, match=message):
        native_nfa.nfa_tables(grammar)


@pytest.mark.parametrize("pattern", [r"a{70}", r"[a-z]{0,30}", r"(ab|cd){3,}"])
def test_state_limit_fails_at_the_same_size(pattern):
    expr = parse_regex(pattern)
    size = len(build_nfa(expr).eps)
    _same(expr, max_states=size)  # exactly enough
    for nfa_builder in (build_nfa, native_nfa.nfa_tables):
        with pytest.raises(ConstraintError, match=f"exceeds {size - 1} NFA states"):
            nfa_builder(expr, size - 1)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_determinize_expr_matches_the_python_path(pattern, monkeypatch):
    expr = parse_regex(pattern)
    native = dfa.determinize_expr(expr, dfa.Limits())
    monkeypatch.setattr(native_nfa, "_lib", [None])
    python_nfa = dfa.determinize_expr(expr, dfa.Limits())
    monkeypatch.setattr(native_subset, "_lib", [None])
    no_kernels = dfa.determinize_expr(expr, dfa.Limits())
    for other in (python_nfa, no_kernels):
        assert np.array_equal(native.trans, other.trans)
        assert np.array_equal(native.accepting, other.accepting)
        assert native.digest == other.digest


def test_kept_programs_stay_bounded(monkeypatch):
    monkeypatch.setattr(native_nfa, "MAX_KEPT_WORDS", 4_000)
    native_nfa._kept.clear()
    native_nfa._kept_words[0] = 0
    for n in range(40):
        native_nfa.nfa_tables(parse_regex(f"[a-z]{{{n}}}(x|y{{2,{n + 2}}})"))
        assert native_nfa._kept_words[0] <= 4_000
    _same(parse_regex("[a-z]{39}(x|y{2,41})"))  # a copy kept before the emptying builds the same


def test_deep_nesting_falls_back_to_the_python_builder():
    import sys

    expr = ir.Literal("x")
    for k in range(sys.getrecursionlimit() // 2):
        expr = ir.Seq((ir.Literal("a"), expr)) if k % 2 else ir.Alt((expr, ir.Literal("b")))
    assert native_nfa.nfa_tables(expr) is None
    deep = dfa.determinize_expr(expr, dfa.Limits())  # built by nfa.py, as before
    assert deep.num_states > 1
