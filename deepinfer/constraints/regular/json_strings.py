"""JSON string encoding of regular expressions over decoded characters.

Owns how a decoded string character maps to JSON string text: the plain
characters (themselves, as UTF-8: one spelling, not json.dumps's default ASCII
`\\uXXXX` form), the escapes of quote, backslash and control characters
(json.dumps's form plus the equivalent `\\uXXXX` spellings) and `\\/`:
`encode_codepoints` / `encode_expr` / `encode_text` / `encode_dfa`, so that a
constraint on a *decoded* string value becomes an exact constraint on the JSON
text. A text encoding of a language, nothing JSON Schema specific: the JSON
Schema front end lowers with it (frontends/json/text.py re-exports it) and the
back ends build the complement of a set of names with it directly (not_in.py
here, cfg/not_in_dfa.py), so it sits in the regular stage, below both. Knows
nothing about schemas or whitespace; of automata only dfa_ops' DFA leaves.
"""

from __future__ import annotations

import bisect
import functools
import json
import re

import numpy as np

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, repeat, seq
from deepinfer.constraints.ir.ranges import SURROGATE_CHAR

from . import dfa_ops

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_NAMED_ESCAPES = {0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", _QUOTE: '\\"',
                  _BACKSLASH: "\\\\"}
HEX = CharClass.of([(ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))])
# characters that appear unescaped inside a JSON string
PLAIN = CharClass.of([(0x20, 0x21), (0x23, 0x5B), (0x5D, ir.MAX_CODEPOINT)])
_PLAIN_STARTS = [lo for lo, _ in PLAIN.ranges]
_PLAIN_ENDS = [hi for _, hi in PLAIN.ranges]
_SLASH = ord("/")


# Memoized (a pure function of an immutable class): key tries of undeclared property
# names complement one class per trie node, and the same classes recur in every schema
# and in both lowerings of a recursive one; this was ~1/4 of a typical compile.
@functools.lru_cache(maxsize=8192)
def encode_codepoints(cls: CharClass) -> Expr:
    """The JSON string encodings of one decoded character from `cls`.

    Plain characters stand for themselves; quote, backslash and control
    characters become their escapes (json.dumps's form, plus the equivalent
    `\\uXXXX` spellings), and `/` may also be written `\\/`. Each encoding
    decodes to exactly one character of `cls`, so the substitution is exact.
    """
    if _plain_only(cls.ranges):  # the usual case (letters of property names): itself, one spelling
        return cls
    plain = _intersect(cls.ranges, PLAIN.ranges)
    parts: list[Expr] = [CharClass(plain)] if plain else []
    controls = _intersect(cls.ranges, ((0, 0x1F),))
    if controls == ((0, 0x1F),):  # every control character: one compact \u00XX form
        parts.append(seq(literal("\\u00"), CharClass.of([(48, 49)]), HEX))
        parts.extend(literal(_NAMED_ESCAPES[cp]) for cp in (8, 9, 10, 12, 13))
    else:
        parts.extend(_escapes(cp) for lo, hi in controls for cp in range(lo, hi + 1))
    for cp in (_QUOTE, _BACKSLASH):
        if cls.contains(cp):
            parts.append(_escapes(cp))
    if cls.contains(ord("/")):
        parts.append(literal("\\/"))
    return alt(*parts) if parts else ir.NOTHING


def _plain_only(ranges) -> bool:
    """Every character of `ranges` is PLAIN and not "/": its JSON encoding is itself, once.
    Why: key tries encode a new class per trie node; the full path below costs ~20 us each."""
    for lo, hi in ranges:
        i = bisect.bisect_right(_PLAIN_STARTS, lo) - 1
        if i < 0 or hi > _PLAIN_ENDS[i] or lo <= _SLASH <= hi:
            return False
    return True


def _escapes(cp: int) -> Expr:
    forms = [literal(f"\\u{cp:04x}")]
    if f"{cp:04x}" != f"{cp:04X}":
        forms.append(literal(f"\\u{cp:04X}"))
    if cp in _NAMED_ESCAPES:
        forms.insert(0, literal(_NAMED_ESCAPES[cp]))
    return alt(*forms)


# text whose JSON encoding is itself and unique: no quote, backslash, control character,
# "/" (also spelled "\/") or lone surrogate
_PLAIN_TEXT = re.compile(r"[\x20\x21\x23-\x2e\x30-\x5b\x5d-\ud7ff\ue000-\U0010ffff]*")


# a lone surrogate is legal in a decoded string (json.loads('"\\ud83d"')) but has no UTF-8 form; a
# high one followed by a low one has no JSON text at all (json.loads joins "\\ud83d\\ude00" into one
# character)
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def encode_text(text: str) -> Expr:
    """The canonical JSON encoding of a decoded string's characters (no quotes); lone surrogates
    are spelled by their `\\uXXXX` escape (json.dumps's form), and a string no JSON text decodes
    to (a high surrogate followed by a low one) is NOTHING."""
    out = json.dumps(text, ensure_ascii=False)[1:-1]
    if SURROGATE_CHAR.search(out):
        if _SURROGATE_PAIR.search(text):
            return ir.NOTHING
        out = SURROGATE_CHAR.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return literal(out)


@functools.lru_cache(maxsize=16384)  # pure; key tries are encoded for every object that has them
def encode_expr(expr: Expr) -> Expr:
    """Map a regular expression over decoded characters to one over JSON string text."""
    match expr:
        case ir.Literal(text):
            if _PLAIN_TEXT.fullmatch(text):  # every character stands for itself, one spelling
                return expr
            return seq(*(encode_codepoints(CharClass.of([(ord(c), ord(c))])) for c in text))
        case CharClass():
            return encode_codepoints(expr)
        case ir.Seq(items):
            return seq(*(encode_expr(i) for i in items))
        case ir.Alt(items):
            return alt(*(encode_expr(i) for i in items)) if items else ir.NOTHING
        case ir.Repeat(item, lo, hi):
            return repeat(encode_expr(item), lo, hi)
        case ir.ByteDfa():
            return encode_dfa(expr)
    raise TypeError(f"cannot JSON-encode {expr!r}")


_CONTROL_COUNT = 0x20
_HEX_DIGITS = [(ord(c), int(c, 16)) for c in "0123456789abcdefABCDEF"]
_ESCAPED = list(range(_CONTROL_COUNT)) + [_QUOTE, _BACKSLASH]  # never written plain
_BY_NAME = [(_QUOTE, _QUOTE), (_BACKSLASH, _BACKSLASH), (_SLASH, _SLASH)] + \
    [(ord(spelled[1]), cp) for cp, spelled in _NAMED_ESCAPES.items() if cp not in (_QUOTE, _BACKSLASH)]


def encode_dfa(leaf: ir.ByteDfa) -> Expr:
    """encode_expr of a DFA leaf over decoded text: the DFA of its JSON string text.

    The same spellings as encode_codepoints: plain characters (UTF-8 bytes other than
    controls, quote and backslash) step as before; from a state with an escapable move a
    backslash opens a small trie of escapes (quote, backslash, slash, the named control
    escapes, and `u00XX` for controls, quote and backslash, hex digits in either case),
    each ending where its decoded character led. Trie states are made only where used."""
    trans = np.asarray(leaf.trans)
    n = trans.shape[0]
    rows = [row for row in trans.copy()]  # int32 [256] each, grown below
    for row in rows:
        row[_ESCAPED] = -1

    def new_state() -> int:
        rows.append(np.full(256, -1, dtype=np.int32))
        return len(rows) - 1

    for q in range(n):
        row = trans[q]
        named = [(byte, int(row[cp])) for byte, cp in _BY_NAME if row[cp] >= 0]
        controls, quote, backslash = row[:_CONTROL_COUNT] >= 0, row[_QUOTE] >= 0, row[_BACKSLASH] >= 0
        if not named and not controls.any():
            continue
        esc = rows[q][_BACKSLASH] = new_state()
        for byte, target in named:
            rows[esc][byte] = target
        if not (controls.any() or quote or backslash):
            continue
        u = rows[esc][ord("u")] = new_state()
        u0 = rows[u][ord("0")] = new_state()
        u00 = rows[u0][ord("0")] = new_state()
        for second, lo in ((ord("0"), 0), (ord("1"), 0x10)):
            if controls[lo:lo + 16].any():
                last = rows[u00][second] = new_state()
                for byte, value in _HEX_DIGITS:
                    rows[last][byte] = row[lo + value]
        for second, third, cp in ((ord("2"), "2", _QUOTE), (ord("5"), "cC", _BACKSLASH)):
            if row[cp] >= 0:
                last = rows[u00][second] = new_state()
                for ch in third:
                    rows[last][ord(ch)] = row[cp]
    accepting = np.zeros(len(rows), dtype=bool)
    accepting[:n] = np.asarray(leaf.accepting)
    return dfa_ops.as_leaf(dfa_ops.finish(np.array(rows, dtype=np.int32), accepting))


ANY_CHAR = CharClass.any_char()


def _intersect(a, b) -> tuple[tuple[int, int], ...]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)
