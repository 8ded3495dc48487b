"""The regex front end: a regular expression (as users and JSON Schema write it) -> IR.

Owns the regex syntax and its error messages (with the offset of the offending
construct); escapes and `[...]` classes are parsed by regex_chars.py, which the
parser here extends. Knows nothing about automata or tokenizers.

Semantics (chosen to agree with JSON Schema's ECMA-262 patterns, and with
Python's `re` under `re.ASCII` on ASCII text):
- the whole pattern must match the whole text (full match); `^` is allowed only
  at the start of a top-level alternative and `$` (or `\\Z`, `\\z`) only at its end;
- `\\d` = [0-9], `\\w` = [A-Za-z0-9_], `\\s` = ECMA-262 white space and line
  terminators (ASCII \\t\\n\\v\\f\\r and space, plus U+00A0, U+1680, U+2000-U+200A,
  U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF); upper case negates;
- `.` = any character except `\\n` (Python's default);
- lazy quantifiers (`*?`, `+?`, `??`, `{m,n}?`) denote the same language as greedy ones;
- escapes: `\\n \\r \\t \\f \\v \\0 \\a \\e \\xhh \\uhhhh \\u{h...} \\Uhhhhhhhh` and any escaped
  non-alphanumeric character;
- groups: `(...)`, `(?:...)`, `(?P<name>...)`, `(?<name>...)`, `(?#comment)`.
Backreferences, lookaround, atomic groups, possessive quantifiers, word
boundaries, inline flags, Unicode properties (`\\p{...}`), anchors in the
middle and surrogate code points raise `ConstraintError` naming the construct and its offset.
"""

from __future__ import annotations

from .. import ir
from ..errors import ConstraintError
from .regex_chars import CharParser

MAX_REPEAT = 100_000


def lower_regex(pattern: str) -> ir.Grammar:
    """Parse `pattern` and return a one-rule grammar (`start`) for its language."""
    if not isinstance(pattern, str):
        raise ConstraintError(f"regex must be a string, not {type(pattern).__name__}")
    return ir.Grammar({"start": parse_regex(pattern)}, start="start")


def parse_regex(pattern: str) -> ir.Expr:
    """Parse `pattern` into an IR expression (raises ConstraintError)."""
    return _Parser(pattern).parse()


class _Parser(CharParser):
    """The regex structure (alternation, sequences, anchors, quantifiers, groups) over CharParser."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0

    # ---------------------------------------------------------------- grammar
    def parse(self) -> ir.Expr:
        lone = ir.first_surrogate(self.text)  # a lone surrogate has no UTF-8 form (as its escape)
        if lone is not None:
            raise self.error(f"character U+{ord(lone):04X} is not a Unicode scalar value", self.text.index(lone))
        expr = self.alternation(top=True)
        if self.pos < len(self.text):
            raise self.error("unbalanced ')'")
        return expr

    def alternation(self, top: bool = False) -> ir.Expr:
        branches = [self.sequence(top)]
        while self.eat("|"):
            branches.append(self.sequence(top))
        return ir.alt(*branches)

    def sequence(self, top: bool) -> ir.Expr:
        items: list[ir.Expr] = []
        start = self.pos
        while self.pos < len(self.text) and self.peek() not in "|)":
            ch = self.peek()
            if ch == "^":
                if not (top and self.pos == start):
                    raise self.error("anchor '^' in the middle of the pattern")
                self.pos += 1
                continue
            if ch == "$" or self.text.startswith(("\\Z", "\\z"), self.pos):
                at = self.pos
                self.pos += 1 if ch == "$" else 2
                if not (top and self.peek() in ("", "|")):
                    raise self.error(f"anchor {self.text[at:self.pos]!r} in the middle of the pattern", at)
                continue
            if self.text.startswith("\\A", self.pos):
                if not (top and self.pos == start):
                    raise self.error("anchor '\\A' in the middle of the pattern")
                self.pos += 2
                continue
            atom = self.atom()
            if atom is None:
                continue
            items.append(self.quantified(atom))
        return ir.seq(*items)

    def quantified(self, atom: ir.Expr) -> ir.Expr:
        while True:
            ch = self.peek()
            if ch == "*":
                self.pos += 1
                lo, hi = 0, None
            elif ch == "+":
                self.pos += 1
                lo, hi = 1, None
            elif ch == "?":
                self.pos += 1
                lo, hi = 0, 1
            elif ch == "{" and (bounds := self.braces()) is not None:
                lo, hi = bounds
            else:
                return atom
            if self.peek() == "+":
                raise self.error("possessive quantifier", self.pos)
            self.eat("?")  # lazy: same language
            if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.braces(peek=True)):
                raise self.error("multiple repeat", self.pos)
            atom = ir.repeat(atom, lo, hi)

    def braces(self, peek: bool = False):
        """Parse `{m}`, `{m,}`, `{m,n}` (also `{,n}`); None if not a quantifier (literal '{')."""
        end = self.text.find("}", self.pos)
        if end < 0:
            return None
        body = self.text[self.pos + 1:end]
        lo_s, comma, hi_s = body.partition(",")
        if not (lo_s.isdigit() or (comma and lo_s == "")) or (hi_s and not hi_s.isdigit()):
            return None
        if not lo_s and not hi_s:
            return None
        if peek:
            return True
        lo = int(lo_s) if lo_s else 0
        hi = (int(hi_s) if hi_s else None) if comma else lo
        if hi is not None and hi < lo:
            raise self.error(f"min repeat greater than max repeat in {{{body}}}")
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.error(f"repeat count in {{{body}}} exceeds the limit {MAX_REPEAT}")
        self.pos = end + 1
        return lo, hi

    def atom(self) -> ir.Expr | None:
        ch = self.peek()
        if ch == "(":
            return self.group()
        if ch == "[":
            return self.char_class()
        if ch == ".":
            self.pos += 1
            return ir.CharClass.of([(0x0A, 0x0A)], negated=True)
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "*+?":
            raise self.error(f"nothing to repeat before {ch!r}")
        if ch == "{" and self.braces(peek=True):
            raise self.error("nothing to repeat before '{'")
        self.pos += 1
        return ir.Literal(ch)

    def group(self) -> ir.Expr | None:
        at = self.pos
        self.pos += 1
        if self.eat("?"):
            if self.eat(":"):
                pass
            elif self.eat("P<") or (self.peek() == "<" and self.peek(1) not in "=!" and self.eat("<")):
                end = self.text.find(">", self.pos)
                name = self.text[self.pos:end] if end >= 0 else ""
                if not name.isidentifier():
                    raise self.error("bad group name", at)
                self.pos = end + 1
            elif self.eat("#"):
                end = self.text.find(")", self.pos)
                if end < 0:
                    raise self.error("unterminated comment", at)
                self.pos = end + 1
                return None
            else:
                raise self.error(self._group_kind(), at)
        self.depth += 1
        if self.depth > 200:
            raise self.error("groups nested too deeply", at)
        expr = self.alternation()
        self.depth -= 1
        if not self.eat(")"):
            raise self.error("missing ')', unterminated group", at)
        return expr

    def _group_kind(self) -> str:
        rest = self.text[self.pos:]
        for prefix, name in (("=", "lookahead '(?='"), ("!", "negative lookahead '(?!'"),
                             ("<=", "lookbehind '(?<='"), ("<!", "negative lookbehind '(?<!'"),
                             (">", "atomic group '(?>'"), ("P=", "backreference '(?P='"),
                             ("(", "conditional group '(?('")):
            if rest.startswith(prefix):
                return f"unsupported {name}"
        return "unsupported inline flags or group '(?" + rest[:1] + "'"
