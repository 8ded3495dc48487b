"""Regular IR -> byte-level Thompson NFA (characters become UTF-8 byte sequences).

Owns the UTF-8 encoding of character classes (range splitting into byte-range
sequences, as in Rust's regex-syntax) and the expansion of bounded
repetition, under a state limit; an `ir.ByteDfa` leaf is embedded as is (one
NFA state per DFA state). Knows nothing about tokens; rule references must
already be non-recursive (they are inlined here).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .. import ir
from ..errors import ConstraintError, Reason

_MAX_SCALAR = (0x7F, 0x7FF, 0xFFFF)


def utf8_sequences(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split code points lo..hi into sequences of byte ranges whose concatenations
    are exactly the UTF-8 encodings of lo..hi (surrogates must be excluded)."""
    out: list[list[tuple[int, int]]] = []
    stack = [(lo, hi)]
    while stack:
        start, end = stack.pop()
        split = _split_once(start, end)
        if split:
            stack.append(split[1])
            stack.append(split[0])
            continue
        out.append(list(zip(chr(start).encode("utf-8"), chr(end).encode("utf-8"))))
    return out


def _split_once(start: int, end: int):
    """Split a range so each part has one encoded length and aligned continuation bytes."""
    for max_cp in _MAX_SCALAR:
        if start <= max_cp < end:
            return (start, max_cp), (max_cp + 1, end)
    if end <= 0x7F:
        return None
    for i in (1, 2, 3):
        m = (1 << (6 * i)) - 1
        if (start & ~m) != (end & ~m):
            if start & m:
                return (start, start | m), ((start | m) + 1, end)
            if (end & m) != m:
                return (start, (end & ~m) - 1), (end & ~m, end)
    return None


@contextmanager
def inlined_rule(rules: dict, inlining: list, name: str):
    """Rule `name`'s body, while it is being inlined (`inlining`: the rules being inlined now);
    the errors both NFA builders (here and native_nfa.py) give for an undefined or recursive rule."""
    if name not in rules:
        raise ConstraintError(f"undefined rule {name!r}")
    if name in inlining:
        raise ConstraintError(f"rule {name!r} is recursive (needs the context-free back end)")
    inlining.append(name)
    try:
        yield rules[name]
    finally:
        inlining.pop()


@dataclass
class Nfa:
    """Thompson NFA over bytes: `eps[s]` epsilon targets, `edges[s]` (lo, hi, target)."""

    max_states: int
    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[tuple[int, int, int]]] = field(default_factory=list)
    start: int = 0
    accept: int = 0

    def new_state(self) -> int:
        if len(self.eps) >= self.max_states:
            raise ConstraintError(f"constraint too large: its automaton exceeds {self.max_states} "
                                  "NFA states (large bounded repetition or alternation?)", Reason.LIMIT)
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1


class _Builder:
    def __init__(self, rules: dict[str, ir.Expr], max_states: int) -> None:
        self.rules = rules
        self.nfa = Nfa(max_states)
        self.class_cache: dict[ir.CharClass, list[list[tuple[int, int]]]] = {}
        self.inlining: list[str] = []

    def build(self, expr: ir.Expr) -> tuple[int, int]:
        """Return (entry, exit) states of a fragment for `expr`."""
        nfa = self.nfa
        match expr:
            case ir.Literal(text):
                entry = cur = nfa.new_state()
                for byte in text.encode("utf-8"):
                    nxt = nfa.new_state()
                    nfa.edges[cur].append((byte, byte, nxt))
                    cur = nxt
                return entry, cur
            case ir.CharClass():
                return self.char_class(expr)
            case ir.Seq(items):
                entry = cur = nfa.new_state()
                for item in items:
                    a, b = self.build(item)
                    nfa.eps[cur].append(a)
                    cur = b
                return entry, cur
            case ir.Alt(items):
                entry, exit_ = nfa.new_state(), nfa.new_state()
                for item in items:
                    a, b = self.build(item)
                    nfa.eps[entry].append(a)
                    nfa.eps[b].append(exit_)
                return entry, exit_
            case ir.Repeat(item, lo, hi):
                return self.repeat(item, lo, hi)
            case ir.ByteDfa():
                return self.byte_dfa(expr)
            case ir.RuleRef(name):
                with inlined_rule(self.rules, self.inlining, name) as body:
                    return self.build(body)
        raise TypeError(f"not an IR expression: {expr!r}")

    def byte_dfa(self, dfa: ir.ByteDfa) -> tuple[int, int]:
        """One NFA state per DFA state, its rows as byte-range edges (runs of equal targets)."""
        nfa = self.nfa
        base = len(nfa.eps)
        for _ in range(dfa.num_states):
            nfa.new_state()
        exit_ = nfa.new_state()
        for q, lo, hi, target in dfa_runs(dfa.trans).tolist():
            nfa.edges[base + q].append((lo, hi, base + target))
        for q in np.flatnonzero(np.asarray(dfa.accepting)).tolist():
            nfa.eps[base + q].append(exit_)
        return base, exit_

    def char_class(self, cls: ir.CharClass) -> tuple[int, int]:
        nfa = self.nfa
        seqs = self.class_cache.get(cls)
        if seqs is None:
            seqs = [s for lo, hi in cls.ranges for s in utf8_sequences(lo, hi)]
            self.class_cache[cls] = seqs
        entry, exit_ = nfa.new_state(), nfa.new_state()
        # Share states between sequences with the same leading byte ranges
        # (a small trie), which keeps wide classes like [^"] compact.
        trie: dict[tuple, int] = {}
        for ranges in seqs:
            cur = entry
            for k, (lo, hi) in enumerate(ranges):
                last = k == len(ranges) - 1
                if last:
                    nfa.edges[cur].append((lo, hi, exit_))
                    break
                key = (cur, lo, hi)
                nxt = trie.get(key)
                if nxt is None:
                    nxt = trie[key] = nfa.new_state()
                    nfa.edges[cur].append((lo, hi, nxt))
                cur = nxt
        return entry, exit_

    def repeat(self, item: ir.Expr, lo: int, hi: int | None) -> tuple[int, int]:
        nfa = self.nfa
        entry = cur = nfa.new_state()
        for _ in range(lo):
            a, b = self.build(item)
            nfa.eps[cur].append(a)
            cur = b
        if hi is None:
            a, b = self.build(item)
            loop = nfa.new_state()
            nfa.eps[cur].append(loop)
            nfa.eps[loop].append(a)
            nfa.eps[b].append(loop)
            return entry, loop
        exit_ = nfa.new_state()
        for _ in range(hi - lo):
            nfa.eps[cur].append(exit_)
            a, b = self.build(item)
            nfa.eps[cur].append(a)
            cur = b
        nfa.eps[cur].append(exit_)
        return entry, exit_


def dfa_runs(trans) -> np.ndarray:
    """int64 [R, 4] (state, first byte, last byte, target): a DFA table's live moves as runs of
    equal targets, row by row, bytes ascending (how a ByteDfa leaf's states become NFA edges)."""
    trans = np.asarray(trans)
    # a run starts where the target changes: [S, 256] -> (state, first byte) pairs
    change = np.ones(trans.shape, dtype=bool)
    change[:, 1:] = trans[:, 1:] != trans[:, :-1]
    rows, starts = np.nonzero(change)
    ends = np.append(starts[1:], 256)
    ends[np.append(rows[1:] != rows[:-1], True)] = 256
    targets = trans[rows, starts]
    live = targets >= 0
    return np.stack([rows[live], starts[live], ends[live] - 1, targets[live]], axis=1).astype(np.int64)


def build_nfa(grammar_or_expr, max_states: int = 200_000) -> Nfa:
    """Build the NFA of a non-recursive grammar (rules inlined) or of one expression."""
    if isinstance(grammar_or_expr, ir.Grammar):
        builder = _Builder(grammar_or_expr.rules, max_states)
        expr: ir.Expr = ir.RuleRef(grammar_or_expr.start)
    else:
        builder = _Builder({}, max_states)
        expr = grammar_or_expr
    start, accept = builder.build(expr)
    builder.nfa.start, builder.nfa.accept = start, accept
    return builder.nfa
