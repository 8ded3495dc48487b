"""Static FOLLOW sets of lexemes: which bytes can start the text after a lexeme.

Owns the classic FIRST/FOLLOW fixed point over the BNF, reduced to one bool
[256] per lexeme: the first bytes of every lexeme that can come right after
it in some derivation. The mask search uses it to drop boundary-crossing
tokens before paying for an Earley step (a pure filter: never changes a mask).
Knows nothing about tokens or parser states.
"""

from __future__ import annotations

import numpy as np

from .lexemes import Bnf, lexeme_index


def follow_first_bytes(bnf: Bnf, nullable: list[bool]) -> list[np.ndarray]:
    num_nt = len(bnf.names)
    first: list[set[int]] = [set() for _ in range(num_nt)]   # lexeme symbols
    changed = True
    while changed:
        changed = False
        for lhs, rhs in bnf.productions:
            before = len(first[lhs])
            first[lhs] |= _first_of(rhs, first, nullable)
            changed |= len(first[lhs]) != before
    follow_nt: list[set[int]] = [set() for _ in range(num_nt)]
    follow_lex: dict[int, set[int]] = {}
    changed = True
    while changed:
        changed = False
        for lhs, rhs in bnf.productions:
            for i, sym in enumerate(rhs):
                rest = rhs[i + 1:]
                found = _first_of(rest, first, nullable)
                if all(s >= 0 and nullable[s] for s in rest):
                    found = found | follow_nt[lhs]
                target = follow_nt[sym] if sym >= 0 else follow_lex.setdefault(sym, set())
                before = len(target)
                target |= found
                changed |= len(target) != before
    out = []
    for index, lexeme in enumerate(bnf.lexemes):
        row = np.zeros(256, dtype=bool)
        for sym in follow_lex.get(-(index + 1), ()):
            row |= bnf.lexemes[lexeme_index(sym)].first_bytes  # no DFA needed (lazy)
        out.append(row)
    return out


def _first_of(symbols, first: list[set[int]], nullable: list[bool]) -> set[int]:
    found: set[int] = set()
    for sym in symbols:
        if sym < 0:
            found.add(sym)
            return found
        found |= first[sym]
        if not nullable[sym]:
            return found
    return found
