"""cfg/counted.py: the laid-out DFA of X{lo,hi} t has the language of the determinized one,
is minimal, and declines the shapes it cannot lay out exactly."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.counted import counted_dfa
from deepinfer.constraints.dfa import Dfa, Limits, determinize
from deepinfer.constraints.dfa_minimize import minimize, trim
from deepinfer.constraints.dfa_ops import _product
from deepinfer.constraints.frontends.json_scalars import ASCII_CHAR, COUNTED_CHAR
from deepinfer.constraints.nfa import build_nfa

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
