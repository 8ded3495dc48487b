"""Decimal ranges as regular expressions over JSON number text.

Owns `number_text`: JSON numbers whose value lies within `minimum`/`maximum`/
`exclusive*` bounds, as an integer part by range (json_numbers) and a fraction
compared with the bounds digit by digit. Bounds arrive as Python numbers exactly
as `json.loads` produced them; comparisons follow Python's (and so `jsonschema`'s)
float semantics, which is why exclusive float bounds step to the next double
before becoming decimals. Knows nothing about schemas, integers' `multipleOf`,
or tokens.
"""

from __future__ import annotations

import math
from decimal import Decimal

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq

from .numbers import DIGIT, EXPONENT, FRACTION, NONZERO, NUMBER_TEXT, Bounds, RangeError, int_range

SAFE_FLOAT = 2.0**53  # beyond this, a float's shortest repr and its exact value differ at integer level
MAX_ZEROS = 300  # "> 0" fractions: 0.(300 zeros)1 is still a positive double; 400 zeros is 0.0


def number_text(b: Bounds) -> Expr:
    """JSON number text with value in the bounds (exponent forms only when unbounded or sign-only)."""
    if b.lo is None and b.hi is None:
        return NUMBER_TEXT
    for v, keyword in ((b.lo, "exclusiveMinimum" if b.lo_excl else "minimum"),
                       (b.hi, "exclusiveMaximum" if b.hi_excl else "maximum")):
        if v is not None and abs(v) >= SAFE_FLOAT:
            raise RangeError(f"bound {v!r} is too large to compare exactly", keyword)
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
