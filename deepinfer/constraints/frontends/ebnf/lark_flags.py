"""lark regex and literal flags as IR rewrites: `i` (case-insensitive) and `s` (dot-all).

Owns what `i` means, which is what Python's `re.IGNORECASE` matches (lark
lexes with `re`): simple case folding over all of Unicode, so "s"i also
matches U+017F and "k"i the Kelvin sign. Knows nothing about grammar syntax.
"""

from __future__ import annotations

from ... import ir


def dot_all(pattern: str) -> str:
    """Rewrite unescaped `.` outside classes as `[\\s\\S]` (regex flag s)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(r"[\s\S]" if ch == "." and not in_class else ch)
        i += 1
    return "".join(out)


def case_insensitive(expr: ir.Expr) -> ir.Expr:
    """The same expression matching letters in either case (flag i)."""
    if isinstance(expr, ir.Literal):
        return ir.seq(*(_fold_class(ir.CharClass.of([(ord(c), ord(c))])) for c in expr.text))
    if isinstance(expr, ir.CharClass):
        return _fold_class(expr)
    if isinstance(expr, ir.Seq):
        return ir.seq(*(case_insensitive(e) for e in expr.items))
    if isinstance(expr, ir.Alt):
        return ir.alt(*(case_insensitive(e) for e in expr.items))
    if isinstance(expr, ir.Repeat):
        return ir.Repeat(case_insensitive(expr.item), expr.min, expr.max)
    return expr


def _fold_class(cls: ir.CharClass) -> ir.Expr:
    """Add every character Python's re.IGNORECASE matches with a member (lark uses re)."""
    folds = _ASCII_FOLDS if all(hi < 0x80 for _, hi in cls.ranges) else _case_folds()
    extra = []
    for lo, hi in cls.ranges:
        if hi - lo > 0x3000:  # a huge range: fold only the characters that have other cases
            members = [cp for cp in folds if lo <= cp <= hi]
        else:
            members = [cp for cp in range(lo, hi + 1) if cp in folds]
        for cp in members:
            extra.extend((o, o) for o in folds[cp])
    folded = ir.CharClass.of(list(cls.ranges) + extra)
    if len(folded.ranges) == 1 and folded.ranges[0][0] == folded.ranges[0][1]:
        return ir.Literal(chr(folded.ranges[0][0]))
    return folded


# What re.IGNORECASE matches with each ASCII letter (the full table below takes
# about a second to build, and keywords are ASCII).
_ASCII_FOLDS: dict[int, tuple[int, ...]] = {
    **{ord(c): (ord(c.upper()),) for c in "abcdefghjlmnopqrtuvwxyz"},
    **{ord(c): (ord(c.lower()),) for c in "ABCDEFGHJLMNOPQRTUVWXYZ"},
    ord("i"): (0x49, 0x130, 0x131), ord("I"): (0x69, 0x130, 0x131),
    ord("s"): (0x53, 0x17F), ord("S"): (0x73, 0x17F),
    ord("k"): (0x4B, 0x212A), ord("K"): (0x6B, 0x212A),
}
_FOLDS: dict[int, tuple[int, ...]] = {}


def _case_folds() -> dict[int, tuple[int, ...]]:
    """code point -> the other code points with the same simple case folding."""
    if not _FOLDS:
        groups: dict[str, set[int]] = {}
        for cp in range(0x1E944):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            ch = chr(cp)
            low = ch.lower()
            if len(low) != 1:
                continue
            key = low.upper().lower() if len(low.upper()) == 1 else low
            groups.setdefault(key, set()).add(cp)
        groups["i"].add(0x130)  # re folds U+0130 with i too (its lower case is two characters)
        for members in groups.values():
            if len(members) > 1:
                for cp in members:
                    _FOLDS[cp] = tuple(sorted(members - {cp}))
    return _FOLDS
