"""cfg/counted.py: the laid-out DFA of X{lo,hi} t has the language of the determinized one,
is minimal, and declines the shapes it cannot lay out exactly."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.counted import counted_dfa
from deepinfer.constraints.regular.dfa import Dfa, Limits, determinize
from deepinfer.constraints.regular.minimize import minimize, trim
from deepinfer.constraints.cfg.composed import split_parts
from deepinfer.constraints.regular.dfa_ops import _product
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from deepinfer.constraints.frontends.json.scalars import ASCII_CHAR, COUNTED_CHAR
from deepinfer.constraints.regular.nfa import build_nfa

DIGIT = ir.CharClass(((48, 57),))
ITEMS = [COUNTED_CHAR, ASCII_CHAR, DIGIT, ir.Alt((ir.Literal("ab"), ir.Literal("c")))]
BOUNDS = [(0, 1), (1, 1), (0, 7), (3, 10), (5, 5), (0, 70), (128, 128)]


def _reference(rest) -> Dfa:
    return determinize(build_nfa(rest, Limits().max_nfa_states), Limits())


@pytest.mark.parametrize("item", ITEMS, ids=["json-char", "ascii-char", "digit", "ab|c"])
@pytest.mark.parametrize("lo,hi", BOUNDS)
@pytest.mark.parametrize("text", ['"', '": ', '"}'])
def test_same_language_as_the_subset_construction(item, lo, hi, text):
    rest = ir.Seq((ir.Repeat(item, lo, hi), ir.Literal(text)))
    got = counted_dfa(rest, Limits())
    assert got is not None
    trans, accepting = got
    assert trans.shape == (len(accepting), 256) and trans.dtype == np.int32
    mine = Dfa(trans, accepting)
    assert _product(mine, _reference(rest), lambda x, y: x != y) is None  # no string in one only
    small, _, _ = minimize(*trim(trans, accepting))
    if hi <= 50:  # Moore stops after 64 rounds: minimality is checked where it runs to the end
        assert len(small) == len(trans), "laid out minimal"


@pytest.mark.parametrize("rest", [
    ir.Seq((ir.Repeat(ir.Alt((ir.Literal("a"), ir.Literal("ab"))), 0, 4), ir.Literal('"'))),  # not prefix-free
    ir.Seq((ir.Repeat(ir.Seq((ir.Literal("a"), ir.Repeat(ir.Literal("b"), 0, None))), 0, 4),   # ab*: one
            ir.Literal('"'))),                                          # accepting state that goes on
    ir.Seq((ir.Repeat(ir.Alt((ir.Literal(""), ir.Literal("a"))), 0, 4), ir.Literal('"'))),   # matches ε
    ir.Seq((ir.Repeat(DIGIT, 0, 4), ir.Literal("1"))),                                       # t starts an X
    ir.Seq((ir.Repeat(DIGIT, 0, None), ir.Literal('"'))),                                    # unbounded
    ir.Seq((ir.Repeat(DIGIT, 0, 4), DIGIT)),                                                 # no literal
    ir.Seq((ir.Literal('"'), ir.Repeat(DIGIT, 0, 4), ir.Literal('"'))),                      # another shape
])
def test_declines_what_it_cannot_lay_out(rest):
    assert counted_dfa(rest, Limits()) is None


def test_respects_the_dfa_state_limit():
    rest = ir.Seq((ir.Repeat(COUNTED_CHAR, 0, 100), ir.Literal('"')))
    assert counted_dfa(rest, Limits(max_dfa_states=50)) is None


def _equivalent(ta, aa, tb, ab) -> bool:
    """Same language: every pair of states reached together agrees on acceptance and on
    which bytes it can read (no state limit, unlike dfa_ops' product)."""
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        a, b = todo.pop()
        if aa[a] != ab[b] or not np.array_equal(ta[a] >= 0, tb[b] >= 0):
            return False
        live = ta[a] >= 0
        for pair in set(zip(ta[a][live].tolist(), tb[b][live].tolist())):
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return True


@pytest.mark.parametrize("lo,hi", [(0, 45), (0, 129), (0, 300), (200, 300), (128, 2000), (5000, 8192)])
def test_json_strings_with_length_bounds(lo, hi):
    """The rests the JSON Schema lowering makes (past 128 characters: X{128} then a restricted
    Y, or'ed with X{lo,128}) are laid out, with the language of the subset construction."""
    rest = split_parts(lower_json_schema({"type": "string", "minLength": lo, "maxLength": hi}).rules["start"])[1]
    got = counted_dfa(rest, Limits())
    assert got is not None
    ref = _reference(rest)
    assert len(got[0]) <= len(ref.trans)
    assert _equivalent(got[0], got[1], ref.trans, ref.accepting)
    broken = np.array(got[0])  # the check notices a changed bound
    broken[np.flatnonzero(broken[:, ord('"')] >= 0)[0], ord('"')] = -1
    assert not _equivalent(broken, got[1], ref.trans, ref.accepting)
