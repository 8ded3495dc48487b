"""Length bounds (`minLength`/`maxLength`) on a string language from `pattern` or `format`.

Owns the choice between json_length's per-part budgets on the expression (kept where they are
exact and small, and where the language's DFA is too big for a product) and the product of the language's
DFA with a character counter (dfa_ops.length_dfa), exact where it fits and otherwise capped to
a shorter maximum (sound, noted), so that a long `maxLength` never fails the compile on
automaton size. Knows nothing about JSON text (the caller encodes the result).
"""

from __future__ import annotations


from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr
from deepinfer.constraints.regular.facts import FactsCache

from .length import bound_length
from .lowering import Lowering


PRODUCT_STATES = 6_000  # a language's product with a length counter, built while lowering (each
# minimization pass over it, here and in its lexeme, is ~0.1 s per 1,000 states of a counter)
PART_STATES = 20_000     # NFA states of json_length's per-part budgets past which the product is used
# (measured: `format: uri-reference` with maxLength 2048 made 25,868 and its DFA broke the 20,000 limit)


def bound_text_length(lw: Lowering, language: Expr, lo: int, hi: int | None,
                       ptr: str) -> tuple[Expr, bool]:
    """(the strings of `language` with lo..hi characters, exact?): json_length's per-part
    budgets where they are exact and small; else the product of the language's DFA with a
    length counter where it fits (exact: a URI's DFA has 21 states, so `format: uri` with
    `maxLength: 255` makes ~5,400, where per-part budgets blew the NFA limit); else the budgets
    (sound, noted) while their automaton is small, and the product with a smaller cap (sound,
    noted) when it is not (`uri-reference` with maxLength 2048 broke the DFA limit)."""
    if isinstance(language, ir.ByteDfa):  # no expression to budget: the product
        return _bound_dfa_length(lw, language, lo, hi, ptr)
    bounded, exact = bound_length(language, lo, hi)
    small = FactsCache({}).of(bounded).states <= PART_STATES
    if exact and small:
        return bounded, exact
    try:
        lang = dfa_ops.expr_dfa(language)
    except dfa_ops.DfaOpError:
        lang = None
    if lang is not None and (not small or lang.num_states * ((hi if hi is not None else lo) + 2) <= PRODUCT_STATES):
        return _bound_dfa_length(lw, lang, lo, hi, ptr)
    return bounded, exact


def _bound_dfa_length(lw: Lowering, lang, lo: int, hi: int | None, ptr: str) -> tuple[Expr, bool]:
    """(the strings of DFA `lang` (a dfa.Dfa or a leaf) with lo..hi characters, True): its
    product with a length counter; where that is too large, with a smaller cap (PRODUCT_STATES
    over the language's states, then halved while the product fails and the cap stays >= lo:
    sound, it only drops long strings, and says so in a note)."""
    lang = dfa_ops.expr_dfa(lang) if isinstance(lang, ir.Expr) else lang
    cap, estimate = hi, None if hi is None else min(hi, max(PRODUCT_STATES // lang.num_states - 2, lo, 1))
    if hi is not None and lang.num_states * (hi + 2) > 4 * PRODUCT_STATES:
        cap = estimate  # no hope at full length: do not build a product (or counter) that big first
    if hi is None and lo + 2 > 4 * PRODUCT_STATES:
        lw.unsupported(f"{ptr}/minLength", "minLength", f"a minLength of {lo} with this pattern or format")
        return dfa_ops.to_ir(lang), True  # skipped (strict=False): the language without the bound
    while True:
        try:  # the reachable product is up to ~4x its minimal DFA (pairs with no way to accept)
            bounded = dfa_ops.intersect(lang, dfa_ops.length_dfa(lo, cap), 4 * PRODUCT_STATES)
            if bounded is not None and bounded.num_states > PRODUCT_STATES:
                raise dfa_ops.DfaOpError(f"the bounded language needs {bounded.num_states} states")
        except dfa_ops.DfaOpError as exc:
            if cap is not None and estimate is not None and estimate < cap:
                cap = estimate
                continue
            if cap is None or cap // 2 < max(lo, 1):
                keyword = "maxLength" if hi is not None else "minLength"
                lw.unsupported(f"{ptr}/{keyword}", keyword, f"bounding the length of this pattern and "
                               f"format's language: {exc}")
                return dfa_ops.to_ir(lang), True  # skipped (strict=False): the language, unbounded
            cap //= 2
            continue
        if cap != hi:
            lw.note(f"{ptr}/maxLength: strings of this pattern or format longer than {cap} characters "
                    f"are not generated (sound; {hi} is the limit)")
        return dfa_ops.to_ir(bounded), True
