"""dfa_ops: intersection, complement and the way back to the IR, against Python `re`."""

import itertools
import re

import pytest

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.frontends.json.pattern import parse_pattern
from deepinfer.constraints.frontends.json.regex import grammar_to_regex

ANY = dfa_ops.expr_dfa(ir.repeat(ir.CharClass.any_char()))
SAMPLES = ["".join(t) for n in range(5) for t in itertools.product("ab-é\n中", repeat=n)]


def _rx(expr):
    return re.compile(grammar_to_regex(ir.Grammar({"start": expr})), re.S)


def _dfa(pattern):
    return dfa_ops.expr_dfa(parse_pattern(pattern, exact=True))


@pytest.mark.parametrize("p,q", [("^a", "b$"), ("^[ab]+$", "a.b"), ("é", "^.{2,3}$"), ("^a$", "^b$")])
def test_intersection(p, q):
    both = dfa_ops.intersect(_dfa(p), _dfa(q))
    rx = _rx(dfa_ops.to_expr(both))
    for s in SAMPLES:
        assert (rx.fullmatch(s) is not None) == (re.search(p, s) is not None and re.search(q, s) is not None), s


@pytest.mark.parametrize("p", ["^a", "b$", "^[ab]*$", "中", "^$", "^(ab|é)+$"])
def test_complement(p):
    rx = _rx(dfa_ops.to_expr(dfa_ops.complement(_dfa(p), ANY)))
    for s in SAMPLES:
        assert (rx.fullmatch(s) is not None) == (re.search(p, s) is None), s


def test_empty_results():
    assert dfa_ops.intersect(_dfa("^a$"), _dfa("^b$")) is None
    assert dfa_ops.to_expr(None) == ir.NOTHING
    assert dfa_ops.complement(ANY, ANY) is None


def test_exact_parse_matches_python_unicode_classes():
    rx = _rx(dfa_ops.to_expr(dfa_ops.complement(_dfa("^\\d+$"), ANY)))
    assert rx.fullmatch("12") is None and rx.fullmatch("٣") is None  # Arabic-Indic digit is \d
    assert rx.fullmatch("12\n") is None  # `$` matches before a final newline
    assert rx.fullmatch("1a")
