"""JSON Schema `pattern` -> IR over decoded string characters, with Python's semantics.

`jsonschema` (the validator this project's soundness is measured against)
checks `pattern` with Python's `re.search`, so patterns are parsed here with
Python's own regex parser and lowered with *search* semantics: unless a
top-level alternative is anchored with `^`/`\\A` and `$`/`\\Z`, any text may come
before or after. Classes keep soundness under Python's Unicode rules: `\\d`,
`\\w`, `\\s` used positively lower to (a subset of) Python's set, used negated to
the exact complement of Python's full Unicode set. Constructs that are not
regular (backreferences, lookaround, word boundaries, case-insensitive flags)
raise PatternError naming the construct.

Also owns `bound_length`: a pattern's language intersected with a character
length range (`minLength`/`maxLength`), exact when the lengths distribute over
the expression and otherwise a sound under-approximation (the caller records it).
Knows nothing about JSON text or schemas.
"""

from __future__ import annotations

import functools
import re
import sys

try:  # Python >= 3.11
    from re import _constants as C
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore
    import sre_parse  # type: ignore

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, repeat, seq

ANY = CharClass.any_char()
ANY_BUT_NEWLINE = CharClass.of([(10, 10)], negated=True)
ASCII_DIGIT = ((48, 57),)
ASCII_WORD = ((48, 57), (65, 90), (95, 95), (97, 122))


class PatternError(ValueError):
    """The pattern is not a regular language we can lower (or not a valid regex)."""


@functools.cache
def _unicode_set(kind: str) -> tuple[tuple[int, int], ...]:
    """Python's exact code point set for \\d (isdecimal), \\w (isalnum or _), \\s (isspace)."""
    test = {"d": str.isdecimal, "w": lambda c: c.isalnum() or c == "_", "s": str.isspace}[kind]
    ranges, start = [], None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and test(chr(cp))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            ranges.append((start, cp - 1))
            start = None
    return tuple(ranges)


def _category(cat, negated_context: bool) -> tuple[tuple[int, int], ...]:
    """Code point ranges of a category; positive ones may be a subset (sound), negated ones
    are the exact complement of Python's full set (so what we accept, Python accepts)."""
    name = str(cat)
    base = {"CATEGORY_DIGIT": "d", "CATEGORY_NOT_DIGIT": "d", "CATEGORY_WORD": "w",
            "CATEGORY_NOT_WORD": "w", "CATEGORY_SPACE": "s", "CATEGORY_NOT_SPACE": "s"}.get(name)
    if base is None:
        raise PatternError(f"unsupported class {name}")
    negative = "_NOT_" in name
    if negative:  # a complement: must exclude every char Python counts in the set
        return CharClass.of(_unicode_set(base), negated=True).ranges
    if negated_context:  # inside [^...]: the set itself must be exact
        return _unicode_set(base)
    return {"d": ASCII_DIGIT, "w": ASCII_WORD, "s": _unicode_set("s")}[base]


def parse_pattern(pattern: str) -> Expr:
    """The set of strings s with `re.search(pattern, s)` (or a sound subset of it)."""
    try:
        parsed = sre_parse.parse(pattern, 0)
    except (re.error, RecursionError, OverflowError) as exc:
        raise PatternError(f"invalid regex: {exc}") from None
    if parsed.state.flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE):
        raise PatternError("inline flags ((?i), (?m), (?s), (?x)) are not supported")
    return _search(list(parsed.data))


def _search(items: list) -> Expr:
    if len(items) == 1:
        op, av = items[0]
        if op is C.BRANCH:
            return alt(*(_search(list(b.data)) for b in av[1]))
        if op is C.SUBPATTERN and not av[1] and not av[2]:
            return _search(list(av[3].data))
    start = bool(items) and items[0][0] is C.AT and items[0][1] in (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
    if start:
        items = items[1:]
    end = bool(items) and items[-1][0] is C.AT and items[-1][1] in (C.AT_END, C.AT_END_STRING)
    if end:
        items = items[:-1]
    body = _seq(items)
    return seq(ir.EMPTY if start else repeat(ANY), body, ir.EMPTY if end else repeat(ANY))


def _seq(items) -> Expr:
    return seq(*(_node(op, av) for op, av in items))


def _node(op, av) -> Expr:
    if op is C.LITERAL:
        return ir.Literal(chr(av))
    if op is C.NOT_LITERAL:
        return CharClass.of([(av, av)], negated=True)
    if op is C.ANY:
        return ANY_BUT_NEWLINE
    if op is C.IN:
        return _class(av)
    if op is C.BRANCH:
        return alt(*(_seq(b.data) for b in av[1]))
    if op is C.SUBPATTERN:
        if av[1] or av[2]:
            raise PatternError("inline flags in groups are not supported")
        return _seq(av[3].data)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
        lo, hi, sub = av
        return repeat(_seq(sub.data), lo, None if hi == C.MAXREPEAT else hi)
    if op is C.AT:
        raise PatternError(f"anchor {av} in the middle of a pattern")
    raise PatternError(f"{op} (backreference, lookaround or other non-regular construct)")


def _class(items) -> Expr:
    negated = bool(items) and items[0][0] is C.NEGATE
    if negated:
        items = items[1:]
    ranges = []
    for op, av in items:
        if op is C.LITERAL:
            ranges.append((av, av))
        elif op is C.RANGE:
            ranges.append(av)
        elif op is C.CATEGORY:
            ranges.extend(_category(av, negated))
        else:
            raise PatternError(f"unsupported class item {op}")
    return CharClass.of(ranges, negated=negated)


# ------------------------------------------------------------- length bounds

def min_len(e: Expr) -> int:
    match e:
        case ir.Literal(text):
            return len(text)
        case CharClass():
            return 1
        case ir.Seq(items):
            return sum(min_len(i) for i in items)
        case ir.Alt(items):
            return min((min_len(i) for i in items), default=0)
        case ir.Repeat(item, lo, _):
            return lo * min_len(item)
    raise PatternError(f"cannot measure {e!r}")


def max_len(e: Expr) -> int | None:
    match e:
        case ir.Literal(text):
            return len(text)
        case CharClass():
            return 1
        case ir.Seq(items):
            total = 0
            for i in items:
                m = max_len(i)
                if m is None:
                    return None
                total += m
            return total
        case ir.Alt(items):
            ms = [max_len(i) for i in items]
            return None if None in ms else max(ms, default=0)
        case ir.Repeat(item, _, hi):
            m = max_len(item)
            if m == 0:
                return 0
            return None if hi is None or m is None else hi * m
    raise PatternError(f"cannot measure {e!r}")


def bound_length(e: Expr, lo: int, hi: int | None) -> tuple[Expr, bool]:
    """(expr, exact): a subset of L(e) with lengths in [lo, hi]; exact=False if some strings
    of L(e) within the bounds were dropped (budgets split between variable parts)."""
    mn, mx = min_len(e), max_len(e)
    if lo <= mn and (hi is None or (mx is not None and mx <= hi)):
        return e, True
    if hi is not None and (hi < mn or hi < lo):
        return ir.NOTHING, True
    if mx is not None and mx < lo:
        return ir.NOTHING, True
    match e:
        case ir.Alt(items):
            parts = [bound_length(i, lo, hi) for i in items]
            return alt(*(p for p, _ in parts)), all(x for _, x in parts)
        case ir.Repeat(item, a, b):
            return _bound_repeat(item, a, b, lo, hi)
        case ir.Seq(items):
            return _bound_seq(list(items), lo, hi)
    return ir.NOTHING, True  # fixed-length leaves outside the bounds


def _bound_repeat(item: Expr, a: int, b: int | None, lo: int, hi: int | None):
    mn, mx = min_len(item), max_len(item)
    if mn == mx and mn > 0:  # fixed-length items: the count bounds are exact
        cnt_lo = max(a, -(-lo // mn))
        cnt_hi = hi // mn if hi is not None else None
        if b is not None:
            cnt_hi = b if cnt_hi is None else min(b, cnt_hi)
        return repeat(item, cnt_lo, cnt_hi), True
    # variable-length items: unroll the minimum, bound the rest with per-item budgets
    if hi is None:  # only a lower bound: ask for enough items of at least length 1
        if mn == 0:
            inner, _ = bound_length(item, 1, None)
            need = max(a, lo)
            return repeat(inner, need, b), False
        return repeat(item, max(a, -(-lo // mn)), b), False
    per_item = max(hi // max(a, 1), mn) if a else hi
    count_hi = b if b is not None else hi // max(mn, 1) if mn else hi
    inner, _ = bound_length(item, max(mn, 1) if not a else mn, min(per_item, hi))
    n_hi = min(count_hi, hi // max(min_len(inner), 1)) if min_len(inner) else count_hi
    # each of at most n items is <= per-item budget; keep the total <= hi
    per = hi // max(n_hi, 1)
    inner, _ = bound_length(item, min_len(inner), per)
    cnt_lo = a
    if lo > 0:
        cnt_lo = max(a, -(-lo // max(max_len(inner) or 1, 1)))
    if cnt_lo > n_hi:
        return ir.NOTHING, False
    return repeat(inner, cnt_lo, n_hi), False


MAX_SPREADS = 64


def _spreads(total: int, parts: int):
    """All ways to write `total` as an ordered sum of `parts` non-negative integers."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _spreads(total - first, parts - 1):
            yield (first, *rest)


def _bound_seq(items: list[Expr], lo: int, hi: int | None):
    mins = [min_len(i) for i in items]
    maxs = [max_len(i) for i in items]
    variable = [k for k in range(len(items)) if maxs[k] != mins[k]]
    fixed = sum(mins[k] for k in range(len(items)) if k not in variable)
    if len(variable) == 1:
        k = variable[0]
        part, exact = bound_length(items[k], max(lo - fixed, 0), None if hi is None else hi - fixed)
        return seq(*items[:k], part, *items[k + 1:]), exact
    if hi is None:  # only a lower bound: every way to spread the missing length is exact
        spreads = list(_spreads(max(lo - sum(mins), 0), len(variable)))
        if len(spreads) <= MAX_SPREADS:
            alts = []
            for extra in spreads:
                out = list(items)
                for n, k in enumerate(variable):
                    out[k], _ = bound_length(items[k], mins[k] + extra[n], None)
                alts.append(seq(*out))
            return alt(*alts), True
    # several variable parts: split the slack evenly (sound, not exact)
    out = list(items)
    base = sum(mins)
    slack_hi = None if hi is None else hi - base
    need = max(lo - base, 0)
    share = None if slack_hi is None else slack_hi // len(variable)
    for n, k in enumerate(variable):
        part_hi = None if share is None else mins[k] + share
        if maxs[k] is not None and part_hi is not None:
            part_hi = min(part_hi, maxs[k])
        room = (maxs[k] if maxs[k] is not None else 10**9) - mins[k]
        if part_hi is not None:
            room = min(room, part_hi - mins[k])
        extra = min(need, room)
        need -= extra
        out[k], _ = bound_length(items[k], mins[k] + extra, part_hi)
    if need > 0:
        return ir.NOTHING, False
    return seq(*out), False
