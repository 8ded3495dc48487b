"""A reference matcher for IR grammars: does a text match the start rule?

A test and debugging aid for the JSON Schema front end, independent of the
token-level back ends: it computes, for each sub-expression and start offset,
the set of offsets where a match can end (memoized), so it handles any IR
including recursive rules that consume input before recursing (all JSON
grammars do). Not for production use: it is O(len(text) * grammar size) in
Python. Knows only the IR.
"""

from __future__ import annotations

import sys

from deepinfer.constraints import ir


def matches(grammar: ir.Grammar, text: str) -> bool:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50_000))  # one frame per nesting level of the grammar
    try:
        return len(text) in _Matcher(grammar, text).ends(ir.RuleRef(grammar.start), 0)
    finally:
        sys.setrecursionlimit(limit)


class _Matcher:
    def __init__(self, grammar: ir.Grammar, text: str):
        self.rules = grammar.rules
        self.text = text
        self.memo: dict[tuple[int, int], frozenset[int]] = {}
        self.active: set[tuple[int, int]] = set()
        self._keep: list = []  # keeps memoized expressions alive so ids stay unique

    def ends(self, e: ir.Expr, i: int) -> frozenset[int]:
        key = (id(e), i)
        got = self.memo.get(key)
        if got is not None:
            return got
        if key in self.active:  # left recursion without progress: no match through it
            return frozenset()
        self.active.add(key)
        out = frozenset(self._ends(e, i))
        self.active.discard(key)
        self.memo[key] = out
        self._keep.append(e)
        return out

    def _ends(self, e: ir.Expr, i: int):
        text = self.text
        if isinstance(e, ir.Literal):
            return {i + len(e.text)} if text.startswith(e.text, i) else set()
        if isinstance(e, ir.CharClass):
            return {i + 1} if i < len(text) and e.contains(ord(text[i])) else set()
        if isinstance(e, ir.Seq):
            cur = {i}
            for item in e.items:
                cur = {j for p in cur for j in self.ends(item, p)}
                if not cur:
                    break
            return cur
        if isinstance(e, ir.Alt):
            return {j for item in e.items for j in self.ends(item, i)}
        if isinstance(e, ir.Repeat):
            out = {i} if e.min == 0 else set()
            cur, seen, count = {i}, set(), 0
            while cur and (e.max is None or count < e.max):
                cur = {j for p in cur for j in self.ends(e.item, p)}
                count += 1
                if count >= e.min:
                    if e.max is None:
                        cur -= seen
                        seen |= cur
                    out |= cur
            return out
        if isinstance(e, ir.RuleRef):
            return self.ends(self.rules[e.name], i)
        if isinstance(e, ir.ByteDfa):  # run the DFA over the rest's UTF-8, one character at a time
            out, q = ({i} if e.accepting[0] else set()), 0
            for j in range(i, len(text)):
                for byte in text[j].encode("utf-8", "surrogatepass"):
                    q = int(e.trans[q, byte])
                    if q < 0:
                        return out
                if e.accepting[q]:
                    out.add(j + 1)
            return out
        raise TypeError(repr(e))

