"""Integer ranges and JSON number text as regular expressions.

Owns the JSON number grammar (`NUMBER_TEXT` and its parts), the numeric
`Bounds` and `RangeError` the number lowerings share, and the digit-level
constructions that make integer `minimum`/`maximum`/`exclusive*` and
`multipleOf` exact: integer ranges (the classic digit-range construction, no
leading zeros) and the multipleOf cases that are regular and small. Decimal
ranges are json_decimals'. Knows nothing about schemas beyond these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq

from .words import words

DIGIT = CharClass.of([(48, 57)])
NONZERO = CharClass.of([(49, 57)])
MAX_ENUMERATED = 4096  # multipleOf in a bounded range: at most this many values spelled out
INT_TEXT = alt(literal("0"), seq(NONZERO, repeat(DIGIT)))
FRACTION = seq(literal("."), repeat(DIGIT, 1))
EXPONENT = seq(CharClass.of([(69, 69), (101, 101)]), optional(CharClass.of([(43, 43), (45, 45)])), repeat(DIGIT, 1))
NUMBER_TEXT = seq(optional(literal("-")), INT_TEXT, optional(FRACTION), optional(EXPONENT))


class RangeError(ValueError):
    """The numeric constraint cannot be expressed exactly (the caller fails closed); `keyword`
    names the bound at fault when one is (else the caller names what it knows)."""

    def __init__(self, message: str, keyword: str | None = None) -> None:
        super().__init__(message)
        self.keyword = keyword


@dataclass(frozen=True)
class Bounds:
    """lo <= x (or lo < x when lo_excl), x <= hi (or <); None = unbounded."""

    lo: float | int | None = None
    lo_excl: bool = False
    hi: float | int | None = None
    hi_excl: bool = False


# ------------------------------------------------------------------ integers

def _digit_class(lo: int, hi: int) -> Expr:
    return CharClass.of([(48 + lo, 48 + hi)])


def _same_length(x: str, y: str) -> Expr:
    """Decimal strings of len(x) == len(y) digits between x and y (inclusive)."""
    if x == y:
        return literal(x)
    n = 0
    while x[n] == y[n]:
        n += 1
    prefix, c, e, xr, yr = x[:n], int(x[n]), int(y[n]), x[n + 1:], y[n + 1:]
    k = len(xr)
    parts = []
    low_full = xr == "0" * k
    high_full = yr == "9" * k
    lo_mid = c if low_full else c + 1
    hi_mid = e if high_full else e - 1
    if not low_full:
        parts.append(seq(literal(str(c)), _same_length(xr, "9" * k)))
    if lo_mid <= hi_mid:
        parts.append(seq(_digit_class(lo_mid, hi_mid), repeat(DIGIT, k, k)))
    if not high_full:
        parts.append(seq(literal(str(e)), _same_length("0" * k, yr)))
    return seq(literal(prefix), alt(*parts))


def nonneg_int_range(a: int, b: int | None) -> Expr:
    """Canonical decimal text of the integers a <= n <= b (b None: unbounded), a >= 0."""
    if b is not None and b < a:
        return ir.NOTHING
    parts = []
    la = len(str(a))
    lb = len(str(b)) if b is not None else la
    for d in range(la, lb + 1):
        lo = max(a, 10 ** (d - 1) if d > 1 else 0)
        hi = 10**d - 1 if b is None else min(b, 10**d - 1)
        if lo <= hi:
            parts.append(_same_length(str(lo).zfill(d), str(hi).zfill(d)))
    if b is None:
        parts.append(seq(NONZERO, repeat(DIGIT, la)))  # more digits than a: all larger
    return alt(*parts)


def int_range(lo: int | None, hi: int | None) -> Expr:
    """Canonical JSON text of the integers in [lo, hi] (None: unbounded)."""
    if lo is not None and hi is not None and hi < lo:
        return ir.NOTHING
    parts = []
    if hi is None or hi >= 0:
        parts.append(nonneg_int_range(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        small = max(-hi, 1) if hi is not None else 1
        parts.append(seq(literal("-"), nonneg_int_range(small, -lo if lo is not None else None)))
    return alt(*parts)


def integer_bounds(b: Bounds) -> tuple[int | None, int | None]:
    """The inclusive integer bounds equivalent to `b` (exact for int and float bounds)."""
    lo = hi = None
    if b.lo is not None:
        lo = math.floor(b.lo) + 1 if b.lo_excl else math.ceil(b.lo)
    if b.hi is not None:
        hi = math.ceil(b.hi) - 1 if b.hi_excl else math.floor(b.hi)
    return lo, hi


def integer_text(b: Bounds, multiple_of=None) -> Expr:
    lo, hi = integer_bounds(b)
    if multiple_of is None or multiple_of == 1:
        return int_range(lo, hi)
    m = _integral(multiple_of)
    if m is None or m <= 0:
        raise RangeError(f"multipleOf {multiple_of!r} on integers is not a positive integer")
    if lo is not None and hi is not None:
        first, last = -((-lo) // m) * m, (hi // m) * m
        if first > last:
            return ir.NOTHING
        if (last - first) // m + 1 <= MAX_ENUMERATED:
            return words(str(v) for v in range(first, last + 1, m))
    k = next((k for k in range(1, 5) if 10**k % m == 0), None)
    sign_only = lo in (None, 0) and hi in (None, 0) and not (lo == 0 and hi == 0)
    if k is None or not sign_only:
        exact = multiples_by_dfa(lo, hi, m)
        if exact is not None:
            return exact
        raise RangeError(f"multipleOf {multiple_of} over this range needs too large an automaton "
                         f"(over {MAX_MULTIPLE_DFA} states)")
    # n is divisible by m (m | 10^k) iff its last k digits are: short ones spelled out, then suffixes
    small = list(range(0, 10**k, m))
    long_ = seq(NONZERO, repeat(DIGIT), words(str(v).zfill(k) for v in small))
    positive = alt(words(str(v) for v in small if v), long_)
    parts = [literal("0")]
    if hi is None:
        parts.append(positive)
    if lo is None:
        parts.append(seq(literal("-"), positive))
    return alt(*parts)


MAX_MULTIPLE_DFA = 20_000  # states of the product of a range's digits with a remainder counter


def multiples_by_dfa(lo: int | None, hi: int | None, m: int) -> Expr | None:
    """The canonical JSON text of the multiples of m in [lo, hi], exactly: the DFA of the range's
    integers times a DFA of the remainder mod m of the digits read so far (divisibility of a
    decimal numeral is regular); None when the product passes MAX_MULTIPLE_DFA states."""
    if m > MAX_MULTIPLE_DFA:
        return None
    start, minus = m, m + 1  # states 0..m-1: remainder of the digits so far
    table = np.full((m + 2, 256), -1, dtype=np.int32)
    digits = np.arange(ord("0"), ord("9") + 1)
    remainders = np.arange(m)
    table[remainders[:, None], digits[None, :]] = (remainders[:, None] * 10 + np.arange(10)[None, :]) % m
    table[start, digits] = table[minus, digits] = np.arange(10) % m
    table[start, ord("-")] = minus
    accepting = np.zeros(m + 2, dtype=bool)
    accepting[0] = True
    numerals = dfa_ops.Dfa(np.vstack([table[start:start + 1], table]).astype(np.int32),
                           np.concatenate([[False], accepting]))
    numerals.trans[numerals.trans >= 0] += 1  # the start copied to row 0, every state one down
    try:
        both = dfa_ops.intersect(dfa_ops.expr_dfa(int_range(lo, hi)), numerals, 4 * MAX_MULTIPLE_DFA)
    except dfa_ops.DfaOpError:
        return None
    if both is not None and both.num_states > MAX_MULTIPLE_DFA:
        return None
    return dfa_ops.as_leaf(both)  # (a remainder automaton is dense: state elimination only blows up)


def window_values(b: Bounds, step: int) -> list[int]:
    """The MAX_ENUMERATED // 2 multiples of `step` within the bounds nearest the lower bound
    (else the upper bound, else zero)."""
    lo, hi = integer_bounds(b)
    n = MAX_ENUMERATED // 2
    if lo is not None:
        first = -((-lo) // step) * step
    elif hi is not None:
        first = (hi // step) * step - step * (n - 1)
    else:
        first = -step * (n // 2)
    return [v for v in range(first, first + step * n, step) if hi is None or v <= hi]


def multiples_window(b: Bounds, multiple_of) -> Expr:
    """A sound subset of the integer multiples within the bounds: the MAX_ENUMERATED // 2
    nearest the lower bound (else the upper bound, else zero), for ranges `integer_text`
    cannot express exactly."""
    m = _integral(multiple_of)
    if m is None or m <= 0:
        raise RangeError(f"multipleOf {multiple_of!r} on integers is not a positive integer")
    values = window_values(b, m)
    return words(str(v) for v in values) if values else ir.NOTHING


def _integral(x) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return None
