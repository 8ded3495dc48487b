"""Static FOLLOW sets of lexemes: which bytes can start the text after a lexeme.

Owns the classic FIRST/FOLLOW fixed point over the BNF, reduced to one bool
[256] per lexeme: the first bytes of every lexeme that can come right after
it in some derivation. The mask search uses it to drop boundary-crossing
tokens before paying for an Earley step (a pure filter: never changes a mask).
Knows nothing about tokens or parser states.
"""

from __future__ import annotations

import numpy as np

from .lexemes import Bnf


def follow_first_bytes(bnf: Bnf, nullable: list[bool]) -> list[np.ndarray]:
    """bool [256] per lexeme: the first bytes of the lexemes that can follow it.

    Sets of lexemes are Python int bitsets (bit i: lexeme i), and byte sets too until
    the end. Why: the set unions and per-lexeme numpy ORs of the classic formulation
    were ~4% of a median MaskBench compile; the result is the same fixed point. Both
    fixed points are worklists (a production is revisited only when a set it reads grew).
    Why: sweeping every production until nothing changes takes one sweep per level of a
    nested chain, and `maxItems: 1000` is a chain of 1,000 optional rules (1.6 s)."""
    num_nt = len(bnf.names)
    productions = bnf.productions
    first = [0] * num_nt   # nonterminal -> lexemes it can start with
    readers: list[list[int]] = [[] for _ in range(num_nt)]  # nonterminal -> productions using it
    by_lhs: list[list[int]] = [[] for _ in range(num_nt)]
    for p, (lhs, rhs) in enumerate(productions):
        by_lhs[lhs].append(p)
        for sym in set(rhs):
            if sym >= 0:
                readers[sym].append(p)
    work = _Worklist(len(productions))
    for p in work:
        lhs, rhs = productions[p]
        found = _first_of(rhs, first, nullable)
        if found | first[lhs] != first[lhs]:
            first[lhs] |= found
            work.requeue(readers[lhs])
    follow_nt = [0] * num_nt
    follow_lex = [0] * len(bnf.lexemes)
    work = _Worklist(len(productions))
    for p in work:
        lhs, rhs = productions[p]
        # Right to left: `trailer` is FIRST(rest), plus FOLLOW(lhs) while rest is all
        # nullable nonterminals (linear per production).
        trailer = follow_nt[lhs]
        for sym in reversed(rhs):
            if sym < 0:
                index = -sym - 1
                follow_lex[index] |= trailer
                trailer = 1 << index
                continue
            if trailer | follow_nt[sym] != follow_nt[sym]:
                follow_nt[sym] |= trailer
                work.requeue(by_lhs[sym])  # what follows sym follows its productions' ends
            trailer = first[sym] | trailer if nullable[sym] else first[sym]
    return _byte_rows(follow_lex, [lexeme.first_bytes for lexeme in bnf.lexemes])  # no DFA needed (lazy)


class _Worklist:
    """Production indices to visit: all at first, then those requeued (each queued once)."""

    def __init__(self, n: int) -> None:
        self.todo = list(range(n))
        self.queued = [True] * n

    def __iter__(self):
        while self.todo:
            p = self.todo.pop()
            self.queued[p] = False
            yield p

    def requeue(self, productions: list[int]) -> None:
        for p in productions:
            if not self.queued[p]:
                self.queued[p] = True
                self.todo.append(p)


def _byte_rows(follow_lex: list[int], firsts: list[np.ndarray]) -> list[np.ndarray]:
    """bool [256] per lexeme: the union of the first bytes of the lexemes in its bitset."""
    if not firsts:
        return []
    packed = np.packbits(np.stack(firsts), axis=1, bitorder="little")  # uint8 [L, 32]
    first_bits = [int.from_bytes(row.tobytes(), "little") for row in packed]
    rows = []
    for lexemes in follow_lex:
        bits = 0
        while lexemes:
            low = lexemes & -lexemes
            bits |= first_bits[low.bit_length() - 1]
            lexemes ^= low
        rows.append(bits.to_bytes(32, "little"))
    table = np.unpackbits(np.frombuffer(b"".join(rows), dtype=np.uint8), bitorder="little")
    table = table.astype(bool).reshape(len(rows), 256)
    return list(table)


def _first_of(symbols, first: list[int], nullable: list[bool]) -> int:
    found = 0
    for sym in symbols:
        if sym < 0:
            return found | 1 << (-sym - 1)
        found |= first[sym]
        if not nullable[sym]:
            return found
    return found
