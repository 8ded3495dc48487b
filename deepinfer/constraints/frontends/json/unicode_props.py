"""ECMA-262 Unicode property escapes in patterns: `\\p{L}`, `\\P{Lu}`, `\\p{gc=Nd}`.

JSON Schema patterns are ECMA-262 regular expressions, where `\\p{...}` (Unicode mode) names a
set of code points; Python's `re` (and so json_pattern's parser) rejects it as a bad escape.
General categories (one or two letters, their long names, optionally as `gc=` or
`General_Category=`) are rewritten here into explicit classes with the code points Python's
`unicodedata` assigns them, before the pattern is parsed. Script properties (`\\p{Script=Greek}`)
and binary properties (`\\p{Alphabetic}`) are not: a PatternError names them. Knows nothing
about IR or JSON.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

_LONG = {"Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
         "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
         "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
         "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
         "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
         "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
         "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
         "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
         "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C",
         "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
         "Unassigned": "Cn"}
_PROPERTY = re.compile(r"\\([pP])\{([^}]*)\}")


@functools.cache
def _categories() -> tuple[str, ...]:
    """The general category of every code point (one pass, ~0.3 s, only for patterns with \\p)."""
    return tuple(unicodedata.category(chr(cp)) for cp in range(sys.maxunicode + 1))


@functools.cache
def category_ranges(name: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of a general category: "Lu", or a group such as "L", or "LC"."""
    wanted = {"LC": ("Lu", "Ll", "Lt")}.get(name)
    cats = _categories()
    out: list[tuple[int, int]] = []
    start = None
    for cp, cat in enumerate(cats + ("",)):
        inside = cat in wanted if wanted else (cat == name or (len(name) == 1 and cat[:1] == name))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return tuple(out)


_CATEGORIES = frozenset("Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp "
                        "Cc Cf Cs Co Cn L M N P S Z C LC".split())


def _category_of(body: str) -> str:
    key, _, value = body.rpartition("=")
    name = _LONG.get(value, value)
    if key not in ("", "gc", "General_Category") or name not in _CATEGORIES:
        raise ValueError(f"the Unicode property \\p{{{body}}} (only general categories are supported)")
    return name


def _spell(lo: int, hi: int) -> str:
    return f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"


def _complement(ranges) -> list[tuple[int, int]]:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= sys.maxunicode:
        out.append((nxt, sys.maxunicode))
    return out


def expand_properties(pattern: str) -> str:
    """`pattern` with each `\\p{..}` / `\\P{..}` replaced by an explicit class (inside a class,
    by its ranges). Raises ValueError for properties other than general categories."""
    if "\\p{" not in pattern and "\\P{" not in pattern:
        return pattern
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            m = _PROPERTY.match(pattern, i)
            if m is None:
                out.append(pattern[i:i + 2])
                i += 2
                continue
            ranges = category_ranges(_category_of(m.group(2)))
            if m.group(1) == "P":
                ranges = _complement(ranges)
            body = "".join(_spell(lo, hi) for lo, hi in ranges)
            out.append(body if in_class else f"[{body}]")
            i = m.end()
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            i += 1
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":  # a leading ] is a literal in Python's classes
                out.append("]")
                i += 1
            continue
        if ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)
