"""Code point range algebra for IR character classes (normalize, complement, drop surrogates).

Split out of ir.py; `ir.CharClass.of` is the user. Ranges are inclusive (lo, hi) pairs.
Knows nothing else.
"""

from __future__ import annotations

import re

MAX_CODEPOINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)  # not encodable in UTF-8, never part of a class
SURROGATE_CHAR = re.compile("[\ud800-\udfff]")  # a character of that range in a str


def first_surrogate(text: str) -> str | None:
    """The first character of `text` no UTF-8 text can hold (a lone surrogate), or None."""
    found = SURROGATE_CHAR.search(text)
    return None if found is None else found.group()


def normalize_ranges(ranges) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for lo, hi in sorted((int(a), int(b)) for a, b in ranges if a <= b):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def complement(ranges) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return tuple(out)


def remove_surrogates(ranges) -> tuple[tuple[int, int], ...]:
    s_lo, s_hi = SURROGATES
    out = []
    for lo, hi in ranges:
        if hi < s_lo or lo > s_hi:
            out.append((lo, hi))
            continue
        if lo < s_lo:
            out.append((lo, s_lo - 1))
        if hi > s_hi:
            out.append((s_hi + 1, hi))
    return tuple(out)
