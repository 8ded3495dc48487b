"""Character-level regex syntax: the parse cursor, escapes and bracketed classes.

Owns the escape tables (`\\d \\w \\s`, `\\n`-style escapes, the unsupported
ones and their names), `\\x`/`\\u`/`\\U` code points and `[...]` classes, each turned
into an IR Literal or CharClass; the semantics are listed in regex.py. The
regex parser (regex.py) extends `CharParser` with the structure: groups,
alternation, anchors and quantifiers; this module must not know about those.
"""

from __future__ import annotations

from .. import ir
from ..errors import ConstraintError

DIGIT = ((0x30, 0x39),)
WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
         (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
CLASS_ESCAPES = {"d": DIGIT, "w": WORD, "s": SPACE}
SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0", "a": "\a",
                  "e": "\x1b"}
UNSUPPORTED_ESCAPES = {"b": "word boundary '\\b'", "B": "non-word boundary '\\B'",
                       "p": "Unicode property '\\p'", "P": "Unicode property '\\P'",
                       "k": "named backreference '\\k'", "G": "anchor '\\G'"}


class CharParser:
    """A cursor over the pattern (position, errors with offsets) plus the character syntax."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # ---------------------------------------------------------------- helpers
    def error(self, what: str, at: int | None = None) -> ConstraintError:
        at = self.pos if at is None else at
        return ConstraintError(f"regex {self.text!r}: {what} at offset {at}")

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def eat(self, s: str) -> bool:
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    # ---------------------------------------------------------------- characters
    def escape(self, in_class: bool):
        """Parse an escape; returns Literal or CharClass (or ranges in a class)."""
        at = self.pos
        self.pos += 1
        ch = self.peek()
        if not ch:
            raise self.error("bad escape (end of pattern)", at)
        self.pos += 1
        if ch.lower() in CLASS_ESCAPES:
            return ir.CharClass.of(CLASS_ESCAPES[ch.lower()], negated=ch.isupper())
        if ch in SIMPLE_ESCAPES and not (ch == "0" and self.peek().isdigit()):
            return ir.Literal(SIMPLE_ESCAPES[ch])
        if ch == "x":
            return ir.Literal(self.hex_digits(2, at))
        if ch == "u":
            if self.peek() == "{":
                end = self.text.find("}", self.pos)
                if end < 0:
                    raise self.error("bad escape '\\u{'", at)
                digits = self.text[self.pos + 1:end]
                self.pos = end + 1
                return ir.Literal(self._codepoint(digits, at))
            return ir.Literal(self.hex_digits(4, at))
        if ch == "U":
            return ir.Literal(self.hex_digits(8, at))
        if ch.isdigit():
            raise self.error(f"unsupported backreference '\\{ch}'", at)
        if ch in UNSUPPORTED_ESCAPES and not (in_class and ch == "b"):
            raise self.error(f"unsupported {UNSUPPORTED_ESCAPES[ch]}", at)
        if in_class and ch == "b":
            return ir.Literal("\b")
        if ch.isalnum():
            raise self.error(f"bad escape '\\{ch}'", at)
        return ir.Literal(ch)

    def hex_digits(self, n: int, at: int) -> str:
        digits = self.text[self.pos:self.pos + n]
        self.pos += n
        if len(digits) != n:
            raise self.error(f"bad escape {self.text[at:self.pos]!r}", at)
        return self._codepoint(digits, at)

    def _codepoint(self, digits: str, at: int) -> str:
        try:
            cp = int(digits, 16)
        except ValueError:
            raise self.error(f"bad escape {self.text[at:self.pos]!r}", at) from None
        if cp > ir.MAX_CODEPOINT or ir.SURROGATES[0] <= cp <= ir.SURROGATES[1]:
            raise self.error(f"escape {self.text[at:self.pos]!r} is not a Unicode scalar value", at)
        return chr(cp)

    def char_class(self) -> ir.Expr:
        at = self.pos
        self.pos += 1
        negated = self.eat("^")
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            ch = self.peek()
            if not ch:
                raise self.error("unterminated character set", at)
            if ch == "]" and not first:
                self.pos += 1
                break
            first = False
            lo = self.class_atom()
            if isinstance(lo, ir.CharClass):
                ranges.extend(lo.ranges)
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                dash = self.pos
                self.pos += 1
                hi = self.class_atom()
                if isinstance(hi, ir.CharClass):
                    raise self.error("bad character range", dash)
                if ord(hi) < ord(lo):
                    raise self.error(f"bad character range {lo}-{hi}", dash - 1)
                ranges.append((ord(lo), ord(hi)))
            else:
                ranges.append((ord(lo), ord(lo)))
        cls = ir.CharClass.of(ranges, negated=negated)
        return ir.NOTHING if cls.is_empty() else cls

    def class_atom(self):
        """One class member: a character (str) or a CharClass (\\d etc.)."""
        if self.peek() == "\\":
            got = self.escape(in_class=True)
            return got if isinstance(got, ir.CharClass) else got.text
        if self.text.startswith("[:", self.pos) and ":]" in self.text[self.pos:]:
            raise self.error("unsupported POSIX character class '[:...:]'")
        ch = self.peek()
        self.pos += 1
        return ch
