"""heads.py builds a head `first` literal `rest` from the shared heads of its parts
(cfg/heads._composed); the composed table must accept exactly the head's language:
minimized, it equals the head's own minimal DFA. Also: non-deterministic splits and
heads without a literal after their first item are not composed."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg import heads
from deepinfer.constraints.regular.dfa import Limits, canonical_order, determinize, minimize
from deepinfer.constraints.regular.nfa import build_nfa

WS = ir.seq(ir.Repeat(ir.alt(ir.Literal("\n"), ir.Literal("\r\n")), 0, 1),
            ir.Repeat(ir.CharClass(((9, 9), (32, 32))), 0, 20))
KEYS = ir.alt(ir.Literal("id"), ir.Literal("idx"), ir.Literal("name"))
STRING_BODY = ir.Repeat(ir.CharClass(((32, 33), (35, 91), (93, 0x10FFFF))), 0, None)


def _minimal(trans, accepting):
    t, a, s = minimize(np.asarray(trans), np.asarray(accepting))
    return canonical_order(t, a, s)


@pytest.mark.parametrize("expr", [
    ir.Seq((ir.Literal(","), *WS.items, ir.Literal('"'), KEYS)),
    ir.Seq((ir.Literal(","), *WS.items, ir.Literal('"name":'), *WS.items)),
    ir.Seq((ir.Literal(","), *WS.items, ir.Literal('"'), STRING_BODY)),
])
def test_composed_head_has_the_heads_language(expr):
    got = heads._composed(expr)
    assert got is not None and got.digest.startswith("head:composed:")
    want = determinize(build_nfa(expr, max_states=heads.MAX_HEAD_NFA),
                       Limits(max_nfa_states=heads.MAX_HEAD_NFA, max_dfa_states=heads.MAX_HEAD_NFA))
    t, a = _minimal(got.trans, got.accepting)
    assert np.array_equal(t, want.trans) and np.array_equal(a, want.accepting)
    assert got.via == b',"' or got.via.startswith(b',"')  # a shortest match: no whitespace


def test_not_composed_when_the_first_part_can_read_the_literal():
    # `,` [ "]* `"` x: an accepting state of `,` [ "]* reads `"`: the split is ambiguous
    expr = ir.Seq((ir.Literal(","), ir.Repeat(ir.CharClass(((32, 32), (34, 34))), 0, None),
                   ir.Literal('"'), ir.Literal("x")))
    assert heads._composed(expr) is None
    assert heads._build(expr) is not None  # determinized as a whole instead


def test_not_composed_without_a_literal_after_the_first_item():
    assert heads._composed(ir.Seq((ir.Literal("{"), *WS.items))) is None


@pytest.mark.parametrize("names", [["id", "idx", "name"], ["a"], ["", "b\\"], ["été", "x\ny", "日本"],
                                   [f"k{i}" for i in range(12)]])
def test_not_in_head_has_the_tries_language(names):
    """A key trie alone (the tail part of a `,` ws `"` trie head) from not_in_dfa.py equals
    its determinized DFA once minimized."""
    from deepinfer.constraints.frontends.json.not_in import encoded_not_in

    expr = ir.Seq((encoded_not_in(names),))
    got = heads._not_in_head(expr)
    assert got is not None and got.digest.startswith("head:not_in:")
    want = determinize(build_nfa(expr), Limits())
    t, a = _minimal(got.trans, got.accepting)
    assert np.array_equal(t, want.trans) and np.array_equal(a, want.accepting)
    composed = heads._composed(ir.Seq((ir.Literal(","), *WS.items, ir.Literal('"'), expr.items[0])))
    if composed is not None:  # the whole head built from it has the head's language too
        whole = ir.Seq((ir.Literal(","), *WS.items, ir.Literal('"'), expr.items[0]))
        want = determinize(build_nfa(whole), Limits())
        t, a = _minimal(composed.trans, composed.accepting)
        assert np.array_equal(t, want.trans) and np.array_equal(a, want.accepting)


def test_composed_digests_differ_exactly_when_the_parts_do():
    """Digests key the token-run caches: different parts (literal, first or tail) must
    give different digests, the same parts the same one."""
    def composed(first_ws: int, literal: str, tail):
        ws = ir.Repeat(ir.CharClass(((32, 32),)), 0, first_ws)
        return heads._composed(ir.Seq((ir.Literal(","), ws, ir.Literal(literal), tail)))

    made = [composed(3, '"', KEYS), composed(3, '"i', KEYS), composed(4, '"', KEYS),
            composed(3, '"', STRING_BODY)]
    assert all(h is not None for h in made)
    assert len({h.digest for h in made}) == len(made)
    assert len({h.trans.tobytes() for h in made}) == len(made)
    assert composed(3, '"', KEYS).digest == made[0].digest
