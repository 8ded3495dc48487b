"""Numeric ranges as regular expressions over JSON number text.

Owns the digit-level constructions that make `minimum`/`maximum`/`exclusive*`
and `multipleOf` exact: integer ranges (the classic digit-range construction,
no leading zeros), decimal ranges (integer part by range, fraction by a
digit-by-digit comparison), and the multipleOf cases that are regular and
small. Bounds arrive as Python numbers exactly as `json.loads` produced them;
comparisons follow Python's (and so `jsonschema`'s) float semantics, which is
why exclusive float bounds step to the next double before becoming decimals.
Knows nothing about schemas beyond these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq

DIGIT = CharClass.of([(48, 57)])
NONZERO = CharClass.of([(49, 57)])
SAFE_FLOAT = 2.0**53  # beyond this, a float's shortest repr and its exact value differ at integer level
MAX_ENUMERATED = 4096
MAX_ZEROS = 300  # "> 0" fractions: 0.(300 zeros)1 is still a positive double; 400 zeros is 0.0  # multipleOf in a bounded range: at most this many values spelled out
INT_TEXT = alt(literal("0"), seq(NONZERO, repeat(DIGIT)))
FRACTION = seq(literal("."), repeat(DIGIT, 1))
EXPONENT = seq(CharClass.of([(69, 69), (101, 101)]), optional(CharClass.of([(43, 43), (45, 45)])), repeat(DIGIT, 1))
NUMBER_TEXT = seq(optional(literal("-")), INT_TEXT, optional(FRACTION), optional(EXPONENT))


class RangeError(ValueError):
    """The numeric constraint cannot be expressed exactly (the caller fails closed)."""


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
        raise RangeError(f"multipleOf {multiple_of} over an unbounded range is only exact "
                         f"for divisors of 10000 with sign-only bounds")
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


def words(items) -> Expr:
    """A finite set of strings as a trie-shaped alternation (shared prefixes)."""
    trie: dict = {}
    for w in items:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = True
    return _trie_expr(trie)


def _trie_expr(node: dict) -> Expr:
    parts = []
    for ch, child in node.items():
        parts.append(ir.EMPTY if ch == "" else seq(literal(ch), _trie_expr(child)))
    return alt(*parts) if parts else ir.NOTHING


# ------------------------------------------------------------------ decimals

def number_text(b: Bounds) -> Expr:
    """JSON number text with value in the bounds (exponent forms only when unbounded or sign-only)."""
    if b.lo is None and b.hi is None:
        return NUMBER_TEXT
    for v in (b.lo, b.hi):
        if v is not None and abs(v) >= SAFE_FLOAT:
            raise RangeError(f"bound {v!r} is too large to compare exactly")
    if b.hi is None and b.lo == 0:  # sign-only bounds keep the exponent forms
        if b.lo_excl:  # > 0: a tiny value must not underflow to 0.0: few zeros, exponents >= -99
            small_exp = seq(CharClass.of([(69, 69), (101, 101)]),
                            alt(seq(optional(literal("+")), repeat(DIGIT, 1)), seq(literal("-"), repeat(DIGIT, 1, 2))))
            return alt(seq(literal("0."), repeat(literal("0"), 0, MAX_ZEROS), NONZERO, repeat(DIGIT)),
                       seq(NONZERO, repeat(DIGIT), optional(FRACTION)),
                       seq(NONZERO, optional(FRACTION), small_exp))
        mantissa = alt(literal("0"), seq(NONZERO, repeat(DIGIT)))
        return seq(mantissa, optional(FRACTION), optional(EXPONENT))
    lo = None if b.lo is None else _decimal_bound(b.lo, b.lo_excl, up=True)
    hi = None if b.hi is None else _decimal_bound(b.hi, b.hi_excl, up=False)
    hi_zero_excl = b.hi is not None and b.hi == 0 and b.hi_excl
    if lo is not None and hi is not None and (lo > hi or lo == hi == 0 and (b.lo_excl or hi_zero_excl)):
        return ir.NOTHING
    parts = []
    if hi is None or hi > 0 or (hi == 0 and not hi_zero_excl):
        lo_pos = max(lo, Decimal(0)) if lo is not None else Decimal(0)
        parts.append(_nonneg_decimal(lo_pos, hi, lo_excl=lo_pos == 0 and b.lo == 0 and b.lo_excl))
    if lo is None or lo < 0:
        # negative values: "-" then |x| in (0 or -hi, -lo]; "-0" forms are left out
        small = -hi if hi is not None and hi < 0 else Decimal(0)
        body = _nonneg_decimal(small, -lo if lo is not None else None, lo_excl=small == 0)
        parts.append(seq(literal("-"), body))
    return alt(*parts)


def _decimal_bound(v, excl: bool, up: bool) -> Decimal:
    """An inclusive decimal bound D such that decimal text d >= D (or <= D) implies the float
    comparison the validator makes. Exclusive bounds step to the adjacent double."""
    if isinstance(v, int) and not isinstance(v, bool):
        if not excl:
            return Decimal(v)
        v = float(v)
    if excl and v != 0:  # (an exclusive 0 stays 0: the callers exclude it themselves)
        v = math.nextafter(float(v), math.inf if up else -math.inf)
    return Decimal(repr(float(v)))


def _split(d: Decimal) -> tuple[int, str]:
    """(integer part, fraction digits without trailing zeros) of a non-negative decimal."""
    s = format(d, "f")
    ip, _, fp = s.partition(".")
    return int(ip), fp.rstrip("0")


def _nonneg_decimal(lo: Decimal, hi: Decimal | None, lo_excl: bool = False) -> Expr:
    li, lf = _split(lo)
    if hi is None:
        return alt(seq(int_range(li + 1, None), optional(FRACTION)),
                   seq(literal(str(li)), _fraction(lf, lo_excl, None, False)))
    hi_i, hf = _split(hi)
    if li == hi_i:
        return seq(literal(str(li)), _fraction(lf, lo_excl, hf, False))
    return alt(seq(literal(str(li)), _fraction(lf, lo_excl, None, False)),
               seq(int_range(li + 1, hi_i - 1), optional(FRACTION)),
               seq(literal(str(hi_i)), _fraction(None, False, hf, False)))


def _fraction(lo: str | None, lo_excl: bool, hi: str | None, hi_excl: bool) -> Expr:
    """Optional '.digits' whose value 0.digits lies within the fraction bounds."""
    tl, th = lo is not None, hi is not None
    fr = _FractionDP(lo or "", lo_excl, hi or "", hi_excl)
    parts = []
    if fr.end_ok(0, tl, th):
        parts.append(ir.EMPTY)
    nonempty = fr.nonempty(0, tl, th)
    if nonempty != ir.NOTHING:
        parts.append(seq(literal("."), nonempty))
    return alt(*parts) if parts else ir.NOTHING


class _FractionDP:
    """Digit strings s with lo <(=) 0.s <(=) hi, built digit by digit; `tl`/`th` say whether
    the digits so far equal lo's/hi's prefix (bounds are padded with zeros on the right)."""

    def __init__(self, lo: str, lo_excl: bool, hi: str, hi_excl: bool):
        self.lo, self.lo_excl, self.hi, self.hi_excl = lo, lo_excl, hi, hi_excl
        self._memo: dict[tuple, Expr] = {}  # per instance: a class-level lru_cache kept every one alive

    def end_ok(self, i: int, tl: bool, th: bool) -> bool:
        if tl and (self.lo[i:].strip("0") or self.lo_excl):
            return False
        if th and self.hi_excl and not self.hi[i:].strip("0"):
            return False
        return True

    def nonempty(self, i: int, tl: bool, th: bool) -> Expr:
        key = (i, tl, th)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._nonempty(i, tl, th)
        return got

    def _nonempty(self, i: int, tl: bool, th: bool) -> Expr:
        if tl and i >= len(self.lo) and not self.lo_excl:
            tl = False  # the rest of lo is zeros: every continuation is >= it
        if not tl and not th:
            return repeat(DIGIT, 1)
        if th and i >= len(self.hi):
            return repeat(literal("0"), 1) if not self.hi_excl and not tl else ir.NOTHING
        if tl and i >= len(self.lo) and not th:  # strictly above zeros: some nonzero digit
            return seq(repeat(literal("0"), 0, MAX_ZEROS), NONZERO, repeat(DIGIT))
        parts = []
        for c in range(10):
            ld = int(self.lo[i]) if tl and i < len(self.lo) else 0
            hd = int(self.hi[i]) if th and i < len(self.hi) else 9
            if (tl and c < ld) or (th and c > hd):
                continue
            ntl, nth = tl and c == ld, th and c == hd
            rest = []
            if self.end_ok(i + 1, ntl, nth):
                rest.append(ir.EMPTY)
            more = self.nonempty(i + 1, ntl, nth)
            if more != ir.NOTHING:
                rest.append(more)
            if rest:
                parts.append(seq(literal(str(c)), alt(*rest)))
        return alt(*parts) if parts else ir.NOTHING
