"""Lookaheads in a pattern where they denote regular languages, decided by DFA products.

Two shapes, the ones real schemas use:
- leading lookaheads, `^(?=.*[A-Z])(?!\\s*$).{8,}$` (password rules, "not blank"): the texts of
  `^S` that also match (or do not match) `^R` at their start, L(^S) ∩ L(^R) or L(^S) \\ L(^R);
  without `^` the same after any text (search semantics: the lookahead sees the rest of the text);
- a tempered repeat, `^((?!mode)(?!Mode).)*$` (no text of R starts inside it): L(^X*$) minus
  the texts with a non-empty suffix in L(^R), that is minus .*(L(^R) ∩ .+), with `^` and `$`
  around it so that the suffixes a lookahead sees are exactly the repeat's.
A negative lookahead's language is taken exactly (Python's `re.search`: `$` before a final
newline, Unicode classes) so that its complement stays sound; a positive one may be the usual
sound subset. Anything else with a lookaround stays an error. Knows nothing about JSON.
"""

from __future__ import annotations

import functools
from typing import Callable

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, repeat, seq

from .pattern_syntax import ANY, C, PatternError, has_lookaround, starts_anchored

Search = Callable[[list, bool], Expr]  # json_pattern._search
_START = (C.AT, C.AT_BEGINNING)
_ONE_CHAR = (C.ANY, C.IN, C.LITERAL, C.NOT_LITERAL)


def with_lookaheads(items: list, exact: bool, search: Search) -> Expr | None:
    """The search language of `items` when their lookaheads take one of the shapes above,
    else None (the caller reports the construct)."""
    start = starts_anchored(items)
    rest = list(items[1:] if start else items)
    looks = []
    while rest and rest[0][0] in (C.ASSERT, C.ASSERT_NOT) and rest[0][1][0] == 1:
        looks.append(rest.pop(0))
    try:
        if looks:
            if has_lookaround(rest):
                return None
            lang = dfa_ops.expr_dfa(search([_START] + rest, exact))
            for op, (_, sub) in looks:
                lang = _with_look(lang, op, list(sub.data), exact, search)
            found = dfa_ops.to_ir(lang)  # password rules count and flag at once: often a DFA leaf
            return found if start else seq(repeat(ANY), found)
        if start:
            return _tempered(rest, exact, search)
    except dfa_ops.DfaOpError as exc:
        raise PatternError(f"a lookahead whose language is too large to build ({exc})") from None
    return None


def _with_look(lang, op, look: list, exact: bool, search: Search):
    """lang ∩ L(^R) for (?=R), lang minus L(^R) for (?!R)."""
    if op is C.ASSERT:
        return dfa_ops.intersect(lang, dfa_ops.expr_dfa(search([_START] + look, exact)))
    return dfa_ops.minus(lang, dfa_ops.expr_dfa(search([_START] + look, True)))


def _tempered(rest: list, exact: bool, search: Search) -> Expr | None:
    """`^((?!R1)(?!R2)X)*$` (any repeat counts; X one character), else None."""
    if len(rest) != 2 or rest[1][0] is not C.AT or rest[1][1] not in (C.AT_END, C.AT_END_STRING):
        return None
    op, av = rest[0]
    if op not in (C.MAX_REPEAT, C.MIN_REPEAT):
        return None
    lo, hi, sub = av
    body = list(sub.data)
    if len(body) == 1 and body[0][0] is C.SUBPATTERN and not body[0][1][1] and not body[0][1][2]:
        body = list(body[0][1][3].data)
    looks = [item for item in body[:-1] if item[0] is C.ASSERT_NOT and item[1][0] == 1]
    if not looks or len(looks) != len(body) - 1 or body[-1][0] not in _ONE_CHAR:
        return None
    core = dfa_ops.expr_dfa(search([_START, (op, (lo, hi, _Items([body[-1]]))), (C.AT, C.AT_END_STRING)], exact))
    looked = [dfa_ops.expr_dfa(search([_START] + list(look.data), True)) for _, (_, look) in looks]
    found = [dfa_ops.to_expr(_none_start(core, looked, _nonempty()))]
    if exact and rest[1][1] is C.AT_END:  # Python's `$` also takes a final "\n" the repeat did not
        # read: the lookaheads still see it, so a suffix they see is at least 2 characters
        with_newline = dfa_ops.expr_dfa(seq(dfa_ops.to_expr(core), ir.Literal("\n")))
        found.append(dfa_ops.to_expr(_none_start(with_newline, looked, _two_or_more())))
    return ir.alt(*found)


def _none_start(lang, looked: list, suffixes):
    """The texts of lang none of whose suffixes in `suffixes` is in a language of `looked`."""
    for starts_here in looked:
        bad = dfa_ops.intersect(starts_here, suffixes)
        somewhere = dfa_ops.expr_dfa(seq(repeat(ANY), dfa_ops.to_expr(bad)))
        lang = dfa_ops.minus(lang, somewhere)
    return lang


class _Items:
    """A parsed sub-pattern made here (what sre_parse.SubPattern offers json_pattern: .data)."""

    def __init__(self, data: list) -> None:
        self.data = data


@functools.cache
def _nonempty():
    return dfa_ops.expr_dfa(repeat(ANY, 1, None))


@functools.cache
def _two_or_more():
    return dfa_ops.expr_dfa(repeat(ANY, 2, None))
