"""cfg/follow.py's FOLLOW first-byte sets (int bitsets) equal the classic set-based fixed point."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints.cfg.earley import Parser
from deepinfer.constraints.cfg.follow import follow_first_bytes
from deepinfer.constraints.cfg.lexemes import split_grammar
from deepinfer.constraints.frontends.ebnf import lower_grammar
from deepinfer.constraints.frontends.json.schema import lower_json_schema


def _reference(bnf, nullable):
    """FIRST/FOLLOW over Python sets of lexeme symbols, then bytes by numpy OR."""
    first = [set() for _ in bnf.names]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in bnf.productions:
            found = set()
            for sym in rhs:
                if sym < 0:
                    found.add(sym)
                    break
                found |= first[sym]
                if not nullable[sym]:
                    break
            if not found <= first[lhs]:
                first[lhs] |= found
                changed = True
    follow = {sym: set() for sym in range(len(bnf.names))}
    follow.update({-(i + 1): set() for i in range(len(bnf.lexemes))})
    changed = True
    while changed:
        changed = False
        for lhs, rhs in bnf.productions:
            for k, sym in enumerate(rhs):
                rest, gained = rhs[k + 1:], set()
                for nxt in rest:
                    if nxt < 0:
                        gained.add(nxt)
                        break
                    gained |= first[nxt]
                    if not nullable[nxt]:
                        break
                else:
                    gained |= follow[lhs]
                if not gained <= follow[sym]:
                    follow[sym] |= gained
                    changed = True
    rows = []
    for i in range(len(bnf.lexemes)):
        row = np.zeros(256, dtype=bool)
        for sym in follow[-(i + 1)]:
            row |= bnf.lexemes[-sym - 1].first_bytes
        rows.append(row)
    return rows


GRAMMARS = [
    lambda: lower_json_schema({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "string"},
        "c": {"$ref": "#"}}, "required": ["b"]}, split=True),
    lambda: lower_json_schema({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"},
                                                                   {"type": "object"}]}}, split=True),
    lambda: lower_grammar('start: expr\nexpr: term ("+" term)*\nterm: "(" expr ")" | NUM | "-" term\n'
                          'NUM: /[0-9]+/\n%ignore " "', "lark", None, None),
    # a chain of 60 nested optional items (maxItems) next to a recursive value, in the worklists'
    # worst order for a sweep
    lambda: lower_json_schema({"type": "object", "properties": {
        "ids": {"type": "array", "items": {"type": "string", "pattern": "^[a-f0-9]{4}$"}, "maxItems": 60},
        "more": {"$ref": "#"}, "tags": {"type": "array", "items": {"$ref": "#"}, "minItems": 2, "maxItems": 9}}},
        split=True),
    lambda: lower_grammar('start: a\na: "x" b? c\nb: "y" a? | c b\nc: d? "z"\nd: a? "w" | ', "lark", None, None),
]


@pytest.mark.parametrize("make", GRAMMARS)
def test_follow_bytes_equal_the_set_fixed_point(make):
    bnf = split_grammar(make())
    nullable = Parser(bnf).nullable
    got, want = follow_first_bytes(bnf, nullable), _reference(bnf, nullable)
    assert len(got) == len(want) == len(bnf.lexemes) > 2
    assert any(row.any() for row in want)
    for g, w in zip(got, want):
        assert g.dtype == bool and g.shape == (256,)
        assert (g == w).all()
