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
            # Right to left: `trailer` is FIRST(rest), plus FOLLOW(lhs) while rest is all
            # nullable nonterminals (linear per production; slicing each rest was quadratic).
            trailer = follow_nt[lhs]
            for sym in reversed(rhs):
                target = follow_nt[sym] if sym >= 0 else follow_lex.setdefault(sym, set())
                if target is not trailer:
                    before = len(target)
                    target |= trailer
                    changed |= len(target) != before
                if sym < 0:
                    trailer = {sym}
                elif nullable[sym]:
                    trailer = first[sym] | trailer
                else:
                    trailer = first[sym]
    out = []
    firsts = [lexeme.first_bytes for lexeme in bnf.lexemes]  # no DFA needed (lazy)
    for index in range(len(bnf.lexemes)):
        row = np.zeros(256, dtype=bool)
        for sym in follow_lex.get(-(index + 1), ()):
            row |= firsts[lexeme_index(sym)]
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
