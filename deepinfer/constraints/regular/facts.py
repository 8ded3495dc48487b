"""Static facts about a regular IR expression, read from the tree without building automata.

Owns `Facts` (empty language? matches ε? matches a non-empty string? the bytes such a
string can start with, and an estimate of the Thompson NFA's state count) and
`FactsCache`, which computes them bottom-up, once per node object, inlining the regular
rules an expression refers to. The context-free back end uses them to decide, per
lexeme, whether anything must be built at compile time: a lexeme whose NFA would be
small gets both its NFA and its DFA on first use (cfg/lexeme.py), so compiles no
longer build automata for pieces the first masks never reach; the compiler uses the
size to pick one DFA for a small grammar (backends.py). The facts are exact (the size
is nfa.py's count up to the sharing of UTF-8 prefixes); first bytes follow the UTF-8
encoding of each character class. A prediction of this stage's own NFA construction,
which is why it sits here and not in ir/; knows the IR and nfa.py's UTF-8 splitting,
nothing about tokens or parsing.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .. import ir
from ..regular.nfa import utf8_sequences


class Facts(NamedTuple):  # a tuple, not a frozen dataclass: built ~1000 times per compile
    empty: bool        # the language is empty
    nullable: bool     # it contains ""
    nonempty: bool     # it contains a string of at least one byte
    first: int         # bit b set: some non-empty string starts with byte b
    states: int        # about how many NFA states nfa.build_nfa makes for it

    def first_bytes(self) -> np.ndarray:
        """bool [256]"""
        # one numpy unpack of the 256-bit mask (a Python loop over 256 bits was ~15 us per lexeme)
        return np.unpackbits(np.frombuffer(self.first.to_bytes(32, "little"), dtype=np.uint8),
                             bitorder="little").astype(bool)


_EPSILON = Facts(False, True, False, 0, 1)
_NOTHING = Facts(True, False, False, 0, 2)


# Facts of expressions without rule references depend on nothing else: kept process-wide,
# keyed by the expression (O(1) cached hash; equal subtrees of different schemas share an
# entry). Why: each compile's FactsCache otherwise recomputed the facts of the same string,
# number and whitespace pieces for every new lexeme (~15% of a median MaskBench TTFM).
_SHARED: dict[ir.Expr, Facts] = {}
_SHARED_MAX = 50_000  # entries; emptied when full (it refills with what schemas use now)


class FactsCache:
    """Facts of expressions over one set of regular rules (memoized per node object)."""

    def __init__(self, rules: dict[str, ir.Expr]) -> None:
        self.rules = rules
        self._memo: dict[int, tuple[ir.Expr, Facts, bool]] = {}  # id -> (node kept alive, facts, closed)

    def of(self, expr: ir.Expr) -> Facts:
        return self._of(expr)[0]

    def _of(self, expr: ir.Expr) -> tuple[Facts, bool]:
        """(facts, closed: no rule reference inside)."""
        hit = self._memo.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1], hit[2]
        facts = _SHARED.get(expr)
        closed = facts is not None
        if facts is None:
            facts, closed = self._compute(expr)
            if closed:
                if len(_SHARED) >= _SHARED_MAX:
                    _SHARED.clear()
                _SHARED[expr] = facts
        self._memo[id(expr)] = (expr, facts, closed)
        return facts, closed

    def _compute(self, e: ir.Expr) -> tuple[Facts, bool]:
        if isinstance(e, ir.Literal):
            data = e.text.encode("utf-8")
            return (Facts(False, False, True, 1 << data[0], len(data) + 1) if data else _EPSILON), True
        if isinstance(e, ir.CharClass):
            if not e.ranges:
                return _NOTHING, True
            first, states = _class_facts(e)
            return Facts(False, False, True, first, states), True
        if isinstance(e, ir.Seq):  # one pass over the items (this runs for every new node)
            states, closed, empty, nullable, nonempty, first, more = 1, True, False, True, False, 0, True
            for item in e.items:
                f, c = self._of(item)
                closed = closed and c
                states += f.states
                empty = empty or f.empty
                nonempty = nonempty or f.nonempty
                if more:  # a first byte of item i starts a string while items < i can be empty
                    first |= f.first
                    more = f.nullable
                nullable = nullable and f.nullable
            if empty:
                return Facts(True, False, False, 0, states), closed
            return Facts(False, nullable, nonempty, first, states), closed
        if isinstance(e, ir.Alt):
            states, closed, empty, nullable, nonempty, first = 2, True, True, False, False, 0
            for item in e.items:
                f, c = self._of(item)
                closed = closed and c
                states += f.states
                empty = empty and f.empty
                nullable = nullable or f.nullable
                nonempty = nonempty or f.nonempty
                first |= f.first
            return Facts(empty, nullable, nonempty, first, states), closed
        if isinstance(e, ir.Repeat):
            item, closed = self._of(e.item)
            return self._repeat(item, e.min, e.max), closed
        if isinstance(e, ir.RuleRef):
            body = self.rules.get(e.name)
            if body is None:
                raise KeyError(e.name)  # callers fall back to building the NFA (its error)
            return self.of(body), False  # depends on this grammar's rules
        if isinstance(e, ir.ByteDfa):
            return _dfa_facts(e), True
        raise TypeError(f"not an IR expression: {e!r}")

    @staticmethod
    def _repeat(item: Facts, lo: int, hi: int | None) -> Facts:
        if hi is not None and hi < lo:
            return _NOTHING
        copies = lo + (1 if hi is None else hi - lo)
        states = 2 + copies * item.states
        if hi == 0:
            return Facts(False, True, False, 0, states)
        if lo > 0 and item.empty:
            return Facts(True, False, False, 0, states)
        return Facts(False, lo == 0 or item.nullable, item.nonempty, item.first, states)


LEAF_STATES = 4_096  # the least size a DFA leaf counts for (cfg/lexeme.py's EAGER_NFA_STATES or more)


def _dfa_facts(dfa: ir.ByteDfa) -> Facts:
    """Facts of a trimmed DFA leaf (nfa.byte_dfa: one NFA state per DFA state, plus an exit).

    Its size counts for at least LEAF_STATES. Why: a lexeme that small is determinized lazily,
    inside a mask step, and one that fails there matches nothing; a leaf packs a determinized
    language into few NFA states, so a lexeme around it (`.*` then the leaf: a lookahead pattern
    without `^`) can exceed the DFA limits, and that must fail the compile instead."""
    live = np.flatnonzero(np.asarray(dfa.trans)[0] >= 0).tolist()
    first = sum(1 << b for b in live)
    return Facts(False, bool(dfa.accepting[0]), bool(live), first, max(dfa.num_states + 1, LEAF_STATES))


@functools.lru_cache(maxsize=4096)
def _class_facts(cls: ir.CharClass) -> tuple[int, int]:
    """(first-byte bits, NFA states) of one character class (nfa.char_class's trie)."""
    first, prefixes = 0, set()
    for lo, hi in cls.ranges:
        if hi <= 0x7F:  # one-byte encodings: the bytes lo..hi, no multi-byte prefix
            first |= (1 << (hi + 1)) - (1 << lo)
            continue
        for ranges in utf8_sequences(lo, hi):
            a, b = ranges[0]
            first |= (1 << (b + 1)) - (1 << a)  # bits a..b
            for k in range(1, len(ranges)):
                prefixes.add(tuple(ranges[:k]))
    return first, 2 + len(prefixes)
