"""JSON Schema `pattern` -> IR over decoded string characters, with Python's semantics.

`jsonschema` (the validator this project's soundness is measured against)
checks `pattern` with Python's `re.search`, so patterns are parsed here with
Python's own regex parser and lowered with *search* semantics: unless a
top-level alternative is anchored with `^`/`\\A` and `$`/`\\Z`, any text may come
before or after. Classes keep soundness under Python's Unicode rules: `\\d`,
`\\w`, `\\s` used positively lower to (a subset of) Python's set, used negated to
the exact complement of Python's full Unicode set. Constructs that are not
regular (backreferences, lookaround, word boundaries, case-insensitive flags,
atomic groups, possessive quantifiers) raise PatternError naming the construct. One
ECMA-262 construct Python lacks is taken too: `\\p{..}` general categories
(json_unicode_props.py).

Length bounds on a pattern's language are json_length's.
Knows nothing about JSON text or schemas.
"""

from __future__ import annotations

import functools
import re
import sys

import numpy as np

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, repeat, seq

from .length import min_len
from .pattern_ends import pattern_with_ends
from .pattern_looks import with_lookaheads
from .pattern_syntax import (ANY, C, MidAnchorError, PatternError, PatternSyntaxError, contains_op,
                             has_lookaround, sre_parse, starts_anchored)
from .unicode_props import expand_properties

ANY_BUT_NEWLINE = CharClass.of([(10, 10)], negated=True)
ASCII_DIGIT = ((48, 57),)
ASCII_WORD = ((48, 57), (65, 90), (95, 95), (97, 122))


@functools.cache
def _unicode_set(kind: str) -> tuple[tuple[int, int], ...]:
    """Python's exact code point set for \\d (isdecimal), \\w (isalnum or _), \\s (isspace)."""
    # every code point as a one-character string, tested by numpy's string ufuncs (the same
    # Unicode tables as str's methods; a Python loop over 1.1M characters took ~0.6 s, inside
    # the first compile that met `\s`)
    chars = np.arange(sys.maxunicode + 1, dtype=np.uint32).view("<U1")
    inside = {"d": np.char.isdecimal, "s": np.char.isspace,
              "w": lambda a: np.char.isalnum(a) | (a == "_")}[kind](chars)
    edges = np.flatnonzero(np.diff(np.concatenate([[False], inside, [False]]).astype(np.int8)))
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[::2].tolist(), edges[1::2].tolist()))


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


def parse_pattern(pattern: str, exact: bool = False) -> Expr:
    """The set of strings s with `re.search(pattern, s)` (or a sound subset of it; exactly that
    set with `exact=True`, as negation needs: Unicode \\d and \\w, `$` before a final newline)."""
    try:
        pattern = expand_properties(pattern)  # ECMA-262 \p{..} general categories (json_unicode_props)
    except ValueError as exc:
        raise PatternError(str(exc)) from None
    try:
        parsed = sre_parse.parse(pattern, 0)
    except (re.error, RecursionError, OverflowError) as exc:
        raise PatternSyntaxError(f"invalid regex: {exc}") from None
    if parsed.state.flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE):
        raise PatternError("inline flags ((?i), (?m), (?s), (?x)) are not supported")
    if exact and parsed.state.flags & re.ASCII:  # its \W \D \S are larger than the Unicode sets
        # the exact reading uses: a negation or disjointness test on it would not be sound (the
        # usual reading, a subset, takes \d \w \s as ASCII anyway)
        raise PatternError("the inline flag (?a) is not supported where the exact language is needed")
    return _search(list(parsed.data), exact)


def _search(items: list, exact: bool) -> Expr:
    if has_lookaround(items):
        found = with_lookaheads(items, exact, _search)
        if found is not None:
            return found
    if len(items) == 1:
        op, av = items[0]
        if op is C.BRANCH:
            return _search_branches([list(b.data) for b in av[1]], exact)
        if op is C.SUBPATTERN and not av[1] and not av[2]:
            return _search(list(av[3].data), exact)
    start = starts_anchored(items)
    if start:
        items = items[1:]
    try:
        return _search_anchored(items, start, exact)
    except MidAnchorError:
        return pattern_with_ends(items, start, lambda op, av: _node(op, av, exact), exact)


def _search_anchored(items: list, start: bool, exact: bool) -> Expr:
    """_search once a leading `^` is taken off, for an end anchor only last (or last in a final
    group or alternation)."""
    if items and _anchored_tail(items[-1]):  # `$` inside a final group or alternation (a|b$)
        return seq(ir.EMPTY if start else repeat(ANY), _ending(items, exact))
    end = bool(items) and items[-1][0] is C.AT and items[-1][1] in (C.AT_END, C.AT_END_STRING)
    newline_ok = end and exact and items[-1][1] is C.AT_END  # Python's `$` also matches before "\n"
    if end:
        items = items[:-1]
    parts = [_node(op, av, exact) for op, av in items]
    # any text around a nullable part absorbs it: .*(N)X = .*X when N matches the empty string
    while parts and not start and _nullable(parts[0]):
        parts.pop(0)
    while parts and not end and _nullable(parts[-1]):
        parts.pop()
    tail = repeat(ir.Literal("\n"), 0, 1) if newline_ok else ir.EMPTY
    return seq(ir.EMPTY if start else repeat(ANY), *parts, tail if end else repeat(ANY))


def _search_branches(branches: list[list], exact: bool) -> Expr:
    """A top-level alternation. The unanchored branches share one `.*(a|b|...).*`, the same
    language as `.*a.*|.*b.*|...`; why: the DFA of the latter remembers which words were already
    seen (a subset of branches), 2^branches states for an unanchored list of 30 names."""
    plain = [bool(b) and not _anchored(b) and not has_lookaround(b) for b in branches]
    free = [b for b, ok in zip(branches, plain) if ok]
    rest = [_search(b, exact) for b, ok in zip(branches, plain) if not ok]
    if len(free) > 1:
        bodies = [_seq(b, exact) for b in free]
        shared = repeat(ANY) if any(_nullable(body) for body in bodies) else \
            seq(repeat(ANY), alt(*bodies), repeat(ANY))
        rest.append(shared)
    else:
        rest += [_search(b, exact) for b in free]
    return alt(*rest)


def _anchored(items: list) -> bool:
    """An anchor anywhere in the branch (_search works out what it means)."""
    return contains_op(items, (C.AT,))


def _is_end(item) -> bool:
    return item[0] is C.AT and item[1] in (C.AT_END, C.AT_END_STRING)


def _anchored_tail(item) -> bool:
    """A final group or alternation that ends (in some branch) with an end anchor."""
    op, av = item
    if op is C.BRANCH:
        return any(b.data and (_is_end(b.data[-1]) or _anchored_tail(b.data[-1])) for b in av[1])
    if op is C.SUBPATTERN and not av[1] and not av[2]:
        data = av[3].data
        return bool(data) and (_is_end(data[-1]) or _anchored_tail(data[-1]))
    return False


def _ending(items: list, exact: bool) -> Expr:
    """The items followed by any text, except where an end anchor closes them."""
    if not items:
        return repeat(ANY)
    op, av = items[-1]
    head = _seq(items[:-1], exact)
    if _is_end(items[-1]):
        newline_ok = exact and av is C.AT_END
        return seq(head, repeat(ir.Literal("\n"), 0, 1) if newline_ok else ir.EMPTY)
    if op is C.BRANCH:
        return seq(head, alt(*(_ending(list(b.data), exact) for b in av[1])))
    if op is C.SUBPATTERN and not av[1] and not av[2]:
        return seq(head, _ending(list(av[3].data), exact))
    return seq(head, _node(op, av, exact), repeat(ANY))


def _nullable(e: Expr) -> bool:
    return min_len(e) == 0


def _seq(items, exact: bool) -> Expr:
    return seq(*(_node(op, av, exact) for op, av in items))


def _node(op, av, exact: bool) -> Expr:
    if op is C.LITERAL:  # a surrogate has no UTF-8 form: the empty class, as [\ud83d] is (not NOTHING,
        # whose min_len 0 would let _search drop it as nullable)
        return CharClass.of([(av, av)]) if ir.SURROGATES[0] <= av <= ir.SURROGATES[1] else ir.Literal(chr(av))
    if op is C.NOT_LITERAL:
        return CharClass.of([(av, av)], negated=True)
    if op is C.ANY:
        return ANY_BUT_NEWLINE
    if op is C.IN:
        return _class(av, exact)
    if op is C.BRANCH:
        return alt(*(_seq(b.data, exact) for b in av[1]))
    if op is C.SUBPATTERN:
        if av[1] or av[2]:
            raise PatternError("inline flags in groups are not supported")
        return _seq(av[3].data, exact)
    if str(op) == "POSSESSIVE_REPEAT":  # never backtracks: a*+a matches nothing, greedy a*a does
        raise PatternError("possessive quantifiers (*+, ++, ?+, {m,n}+) are not supported")
    if str(op) == "ATOMIC_GROUP":
        raise PatternError("atomic groups (?>...) are not supported")
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        lo, hi, sub = av
        return repeat(_seq(sub.data, exact), lo, None if hi == C.MAXREPEAT else hi)
    if op is C.AT:
        raise MidAnchorError(f"anchor {av} in the middle of a pattern")
    raise PatternError(f"{op} (backreference, lookaround or other non-regular construct)")


def _class(items, exact: bool) -> Expr:
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
            ranges.extend(_category(av, negated or exact))
        else:
            raise PatternError(f"unsupported class item {op}")
    return CharClass.of(ranges, negated=negated)
