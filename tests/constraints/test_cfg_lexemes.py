"""Lexemes of the context-free back end: lazily built DFAs equal eager ones, emptiness and
nullability read from the NFA, lexemes shared across grammars, the split's time budget, and
lazily computed character steps equal full tables."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.scan import lexeme_cache
from deepinfer.constraints.cfg.lexeme import analyze
from deepinfer.constraints.regular.dfa import Limits, determinize
from deepinfer.constraints.frontends.regex import parse_regex
from deepinfer.constraints.regular.nfa import build_nfa

from scan_test_patterns import PATTERNS, lexeme_of


def test_lazy_lexeme_equals_eager_dfa():
    for pattern in PATTERNS:
        lex = lexeme_of(pattern)
        assert "trans" not in lex.__dict__           # not built by construction
        dfa = determinize(build_nfa(parse_regex(pattern)), Limits())
        assert np.array_equal(lex.trans[:dfa.num_states], dfa.trans)
        assert lex.first_bytes.tolist() == (dfa.trans[0] >= 0).tolist()
        assert lex.row(lex.start) == tuple(lex.trans[lex.start].tolist())


def test_analyze_nullable_and_empty():
    assert analyze(build_nfa(parse_regex("a*")))[:2] == (True, True)
    assert analyze(build_nfa(parse_regex("")))[:2] == (True, False)
    assert analyze(build_nfa(parse_regex("ab")))[:2] == (False, True)
    assert analyze(build_nfa(ir.NOTHING))[:2] == (False, False)


def test_lexemes_shared_across_grammars(tiny_compiler):
    lexeme_cache.clear()
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    one = tiny_compiler.compile_json_schema(schema)
    two = tiny_compiler.compile_json_schema({**schema, "title": "other"})
    if type(one.automaton).__name__ != "CfgAutomaton":
        pytest.skip("schema went to the regular back end")
    shared = {id(x) for x in one.automaton.lexemes} & {id(x) for x in two.automaton.lexemes}
    assert shared


def test_lexeme_split_fails_closed_after_its_time_budget():
    """A grammar whose split into lexemes outlasts Limits.time_budget_s is a ConstraintError
    (bounded compile time), not a compile that runs into the caller's timeout."""
    from deepinfer.constraints import ConstraintError
    from deepinfer.constraints import ir as _ir
    from deepinfer.constraints.cfg.lexemes import split_grammar
    from deepinfer.constraints.regular.dfa import Limits
    from deepinfer.constraints.frontends.ebnf import lower_grammar

    grammar = lower_grammar('start: "(" start ")" | "a" | "b"', "lark", None, None)
    assert isinstance(grammar, _ir.Grammar)
    split_grammar(grammar, Limits())  # within budget: fine
    with pytest.raises(ConstraintError, match="too complex"):
        split_grammar(grammar, Limits(time_budget_s=-1.0))


@pytest.mark.parametrize("pattern", [r'"([^"\\]|\\["\\nt]){0,300}"', r'[a-z0-9]{2,}x|[^"]{5,280}!'])
def test_lazy_character_steps_equal_full_tables(pattern):
    from deepinfer.constraints.regular.chains import LazySteps, chain, loop_bits

    trans = lexeme_of(pattern).trans
    full, lazy = loop_bits(trans), LazySteps(trans)
    states = range(0, trans.shape[0], 7)
    for q in states:
        assert np.array_equal(lazy.steps[q], full.steps[q])
    for q in states:
        a, b = chain(full, q), chain(lazy, q)
        assert (a is None) == (b is None)
        if a is not None:
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
