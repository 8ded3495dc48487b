"""dfa._all_closures (one Tarjan pass) equals a plain epsilon search from every state; dfa.literal_set_dfa
(an enum's trie) equals determinizing the alternation, table and digest."""

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.regular.dfa import _all_closures
from deepinfer.constraints.frontends.regex import parse_regex
from deepinfer.constraints.regular.nfa import build_nfa


def _search(nfa, bit_of, state):
    seen, stack, bits = {state}, [state], 0
    while stack:
        s = stack.pop()
        if s in bit_of:
            bits |= 1 << bit_of[s]
        for t in nfa.eps[s]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return bits


@pytest.mark.parametrize("expr", [parse_regex(p) for p in
                                  [r"(a|b)*c", r"((a*)*|b?)+", r"(x?y*)*z", r"[a-z]{2,5}(\.[a-z]+)*",
                                   r"(((a)*b)*c)*", r"(|a|(b|)*)*"]] + [ir.EMPTY, ir.Repeat(ir.EMPTY, 0, None)])
def test_all_closures_match_search(expr):
    nfa = build_nfa(expr)
    important = [s for s in range(len(nfa.edges)) if nfa.edges[s] or s == nfa.accept]
    bit_of = {s: i for i, s in enumerate(important)}
    closures = _all_closures(nfa, bit_of)
    assert all(closures[s] == _search(nfa, bit_of, s) for s in range(len(nfa.eps)))


@pytest.mark.parametrize("values", [
    ['"red"', '"green"', '"blue"'],
    ["1", "12", "123", "2"],            # values that are prefixes of others
    ['"a"'],
    ["null", "true", "false", '"ab\u00e9"', '"a"', '"\u4e2d\u6587"'],
    ["ab", "ab", "b"],                  # a repeated value
])
def test_literal_set_dfa_is_the_determinized_alternation(values):
    from deepinfer.constraints import ir
    from deepinfer.constraints.regular.dfa import Limits, determinize, literal_set_dfa
    from deepinfer.constraints.regular.nfa import build_nfa

    expr = ir.Alt(tuple(ir.Literal(v) for v in values)) if len(values) > 1 else ir.Literal(values[0])
    want = determinize(build_nfa(expr, 10**5), Limits())
    got = literal_set_dfa([v.encode("utf-8") for v in values])
    assert got.digest == want.digest
    assert np.array_equal(got.trans, want.trans) and np.array_equal(got.accepting, want.accepting)
