"""The digit limit on generated JSON numbers (the `number_digits` option).

Owns the bounded number language and narrowing a number sub-schema's language to it. Why: a
JSON number's grammar is unbounded (`420.0000000...` is valid to any length), so a model that
falls into a run of digits fills its whole token budget with one number; bounded numbers end.
The limit is N digits in the integer part, N in the fraction, 3 in the exponent (N = 17 by
default in the engine: the significant digits a double holds). Knows nothing about schemas
beyond the number expressions it is handed.
"""

from __future__ import annotations

from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq
from deepinfer.constraints.regular import dfa_ops

from .numbers import DIGIT, NONZERO, NUMBER_TEXT, int_range

EXPONENT_DIGITS = 3  # 1e308 is the largest double's exponent


def check_limit(limit) -> int | None:
    """The option's value, checked: None (off) or a positive int."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConstraintError(f"number_digits must be None or a positive integer, not {limit!r}")
    return limit


def bounded_number_text(limit: int) -> Expr:
    """JSON number text with at most `limit` integer and `limit` fraction digits, and at most
    EXPONENT_DIGITS exponent digits."""
    integer = _integer(limit)
    fraction = seq(literal("."), repeat(DIGIT, 1, limit))
    exponent = seq(CharClass.of([(69, 69), (101, 101)]), optional(CharClass.of([(43, 43), (45, 45)])),
                   repeat(DIGIT, 1, EXPONENT_DIGITS))
    return seq(optional(literal("-")), integer, optional(fraction), optional(exponent))


def bound_digits(numbers: Expr, limit: int) -> tuple[Expr, str | None]:
    """(`numbers` narrowed to the digit limit, None), or (`numbers` unchanged, why) when the
    narrowing would leave nothing (bounds beyond 10**limit) or is too large to build."""
    if numbers == NUMBER_TEXT:  # the common cases, spelled out rather than through a product
        return bounded_number_text(limit), None
    if numbers == int_range(None, None):
        # int_range's form: no "-0"
        return alt(literal("0"), seq(optional(literal("-")), NONZERO, repeat(DIGIT, 0, limit - 1))), None
    try:
        narrowed = dfa_ops.intersect(dfa_ops.expr_dfa(numbers), dfa_ops.expr_dfa(bounded_number_text(limit)))
    except dfa_ops.DfaOpError as exc:
        return numbers, f"too large to bound: {exc}"
    if narrowed is None or dfa_ops.is_empty(narrowed):
        return numbers, f"no number of at most {limit} digits is valid here"
    return dfa_ops.to_ir(narrowed), None


def _integer(limit: int) -> Expr:
    return alt(literal("0"), seq(NONZERO, repeat(DIGIT, 0, limit - 1)))
