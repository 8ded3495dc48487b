"""End anchors inside a pattern, such as `^(/?[a-z]*($|/))*$` (a path whose last segment may end
the text): the language as a pair per sub-pattern.

For each sub-pattern E, (F, T): F = the texts E matches without asserting the end, T = the texts
E matches while asserting the end at their last character (a `$` was crossed and everything
after it matched the empty text). Then under search semantics the pattern's language is
prefix·F·.* ∪ prefix·T, with prefix = .* unless the pattern starts with `^`. The rules:
  literal, class: (c, ∅)      `$`: (∅, ε)      A|B: (F_A ∪ F_B, T_A ∪ T_B)
  AB: (F_A F_B, F_A T_B ∪ T_A when B can match ε)
  E{lo,hi}: (F_E{lo,hi}, F_E{j,hi-1} T_E) with j = 0 when E can match ε, else max(lo-1, 0).
ECMA-262 semantics (JSON Schema's): `$` is the end of the text only, not a place before a final
newline, so the exact (Python) reading used by negation is refused. Knows nothing about JSON.
"""

from __future__ import annotations

from typing import Callable

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, repeat, seq
from deepinfer.constraints.regular.facts import FactsCache

from .pattern_syntax import ANY, C, PatternError

Pair = tuple[Expr, "Expr | None"]  # (F, T); T None = no text
MAX_UNROLL = 64  # the largest repeat count spelled out


def pattern_with_ends(items: list, start: bool, node: Callable, exact: bool) -> Expr:
    """The search language of `items` (after a leading `^` when `start`) with end anchors inside."""
    if exact:
        raise PatternError("an end anchor inside a pattern is not supported under `not`")
    free, ended = _sequence(items, node)
    prefix = ir.EMPTY if start else repeat(ANY)
    return seq(prefix, alt(seq(free, repeat(ANY)), *(() if ended is None else (ended,))))


def _sequence(items: list, node: Callable) -> Pair:
    free, ended = ir.EMPTY, None
    for op, av in items:
        f, t = _pair(op, av, node)
        nullable = _matches_empty(f, t)
        ended = _union(seq(free, t) if t is not None else None,
                       ended if (ended is not None and nullable) else None)
        free = seq(free, f)
    return free, ended


def _pair(op, av, node: Callable) -> Pair:
    if op is C.AT:
        if av in (C.AT_END, C.AT_END_STRING):
            return ir.NOTHING, ir.EMPTY
        raise PatternError(f"anchor {av} in the middle of a pattern")
    if op is C.BRANCH:
        pairs = [_sequence(list(b.data), node) for b in av[1]]
        return alt(*(f for f, _ in pairs)), _union(*(t for _, t in pairs))
    if op is C.SUBPATTERN and not av[1] and not av[2]:
        return _sequence(list(av[3].data), node)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        lo, hi, sub = av
        hi = None if hi == C.MAXREPEAT else hi
        f, t = _sequence(list(sub.data), node)
        free = repeat(f, lo, hi)
        if t is None or hi == 0:
            return free, None
        before_lo = 0 if _matches_empty(f, t) else max(lo - 1, 0)
        if before_lo > MAX_UNROLL:
            raise PatternError(f"an end anchor inside a repeat of at least {lo} is not supported")
        return free, seq(repeat(f, before_lo, None if hi is None else hi - 1), t)
    return node(op, av), None


def _matches_empty(free: Expr, ended: Expr | None) -> bool:
    """Whether F or T holds the empty text (exactly: an empty language such as a·∅ is not
    nullable, which a minimum length of 0 would say it is)."""
    facts = FactsCache({})
    return any(e is not None and facts.of(e).nullable for e in (free, ended))


def _union(*parts: Expr | None) -> Expr | None:
    kept = [p for p in parts if p is not None]
    return alt(*kept) if kept else None
