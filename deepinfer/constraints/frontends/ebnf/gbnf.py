"""The GBNF front end: llama.cpp's grammar format (also xgrammar's EBNF) -> IR.

Owns GBNF syntax and its error messages with line and column:
`name ::= body` rules (names of letters, digits, `-` and `_`; a rule runs
until the next `name ::=`), `"literals"` with escapes (`\\n \\r \\t \\\\ \\" \\xhh
\\uhhhh \\Uhhhhhhhh`), character classes `[a-z]`, `[^...]` with ranges and
escapes, `.` (any character), grouping, `|`, `* + ?`, `{m}`, `{m,}`, `{m,n}`,
and `#` comments. There is no terminal/rule distinction and no implicit
whitespace. Knows nothing about automata or tokenizers.
"""

from __future__ import annotations

import re

from ... import ir
from ...errors import ConstraintError
from .checks import SourceMap, check_grammar, line_col, prune_unreachable

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_RULE_HEAD = re.compile(r"([A-Za-z0-9_-]+)[ \t]*::=")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "[": "[", "]": "]",
            "-": "-", "^": "^", "/": "/", "f": "\f", "v": "\v", "0": "\0", "a": "\a", "b": "\b",
            "e": "\x1b", ".": ".", "|": "|", "(": "(", ")": ")", "*": "*", "+": "+", "?": "?",
            "{": "{", "}": "}", " ": " "}
_HEX = {"x": 2, "u": 4, "U": 8}
MAX_REPEAT = 10_000
_BRACES = re.compile(r"\{\s*(\d*)\s*(,\s*(\d*)\s*)?\}")


def lower_gbnf(text: str, start: str = "root") -> ir.Grammar:
    parser = _Parser(text)
    rules = parser.parse()
    if start not in rules:
        names = ", ".join(rules) or "none"
        raise ConstraintError(f"GBNF grammar has no start rule {start!r} (rules: {names})")
    grammar = ir.Grammar(rules, start)
    check_grammar(grammar, parser.source, start)
    return prune_unreachable(grammar)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.source = SourceMap()

    def error(self, what: str, at: int | None = None) -> ConstraintError:
        line, col = line_col(self.text, self.pos if at is None else at)
        return ConstraintError(f"GBNF grammar line {line} column {col}: {what}")

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r\n":
                self.pos += 1
            elif ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            else:
                return

    def at_rule_head(self) -> bool:
        return _RULE_HEAD.match(self.text, self.pos) is not None

    # ------------------------------------------------------------------ rules
    def parse(self) -> dict[str, ir.Expr]:
        rules: dict[str, ir.Expr] = {}
        self.skip_space()
        while self.pos < len(self.text):
            head = _RULE_HEAD.match(self.text, self.pos)
            if head is None:
                raise self.error("syntax error, expected a rule definition 'name ::= ...'")
            name = head.group(1)
            if name in rules:
                raise self.error(f"rule {name!r} is defined more than once")
            self.source.definitions[name] = line_col(self.text, self.pos)
            self.pos = head.end()
            rules[name] = self.alternation(nested=False)
            self.skip_space()
        return rules

    def alternation(self, nested: bool) -> ir.Expr:
        branches = [self.sequence(nested)]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            branches.append(self.sequence(nested))
        return ir.alt(*branches)

    def sequence(self, nested: bool) -> ir.Expr:
        items: list[ir.Expr] = []
        while True:
            self.skip_space()
            if self.pos >= len(self.text):
                break
            ch = self.text[self.pos]
            if ch in "|)" or (not nested and self.at_rule_head()):
                break
            items.append(self.quantified(self.atom()))
        return ir.seq(*items)

    def quantified(self, atom: ir.Expr) -> ir.Expr:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in "*+?":
                self.pos += 1
                atom = ir.repeat(atom, *{"*": (0, None), "+": (1, None), "?": (0, 1)}[ch])
            elif ch == "{":
                lo, hi = self.braces()
                atom = ir.repeat(atom, lo, hi)
            else:
                break
        return atom

    def braces(self) -> tuple[int, int | None]:
        at = self.pos
        m = _BRACES.match(self.text, self.pos)
        if m is None or not (m.group(1) or m.group(3)):
            raise self.error("syntax error in repetition; expected {m}, {m,}, {,n} or {m,n}")
        self.pos = m.end()
        lo = int(m.group(1) or 0)
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}} has its bounds reversed", at)
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.error(f"repetition bound above {MAX_REPEAT}", at)
        return lo, hi

    # ------------------------------------------------------------------ atoms
    def atom(self) -> ir.Expr:
        text, at = self.text, self.pos
        ch = text[at]
        if ch == '"':
            return self.string()
        if ch == "[":
            return self.char_class()
        if ch == ".":
            self.pos += 1
            return ir.CharClass.any_char()
        if ch == "(":
            self.pos += 1
            self.skip_space()
            if text.startswith(("?=", "?!", "="), self.pos):
                raise self.error("unsupported GBNF feature: lookahead assertion", at)
            body = self.alternation(nested=True)
            self.skip_space()
            if self.pos >= len(text) or text[self.pos] != ")":
                raise self.error("syntax error, unclosed '('", at)
            self.pos += 1
            return body
        name = _NAME.match(text, at)
        if name is None:
            raise self.error(f"syntax error, unexpected {ch!r}")
        self.pos = name.end()
        self.source.references.setdefault(name.group(0), line_col(text, at))
        return ir.RuleRef(name.group(0))

    def string(self) -> ir.Expr:
        start = self.pos
        self.pos += 1
        chars = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise self.error("unterminated string literal", start)
            ch = self.text[self.pos]
            if ch == '"':
                self.pos += 1
                return ir.literal("".join(chars))
            chars.append(self.char())

    def char(self) -> str:
        """One literal character, decoding an escape."""
        text, at = self.text, self.pos
        ch = text[at]
        if ch != "\\":
            self.pos += 1
            return ch
        esc = text[at + 1] if at + 1 < len(text) else ""
        if esc in _HEX:
            digits = text[at + 2:at + 2 + _HEX[esc]]
            if len(digits) != _HEX[esc] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.error(f"bad escape \\{esc}: expected {_HEX[esc]} hex digits", at)
            cp = int(digits, 16)
            if cp > ir.MAX_CODEPOINT or ir.SURROGATES[0] <= cp <= ir.SURROGATES[1]:
                raise self.error(f"escape \\{esc}{digits} is not a Unicode scalar value", at)
            self.pos = at + 2 + _HEX[esc]
            return chr(cp)
        if esc in _ESCAPES:
            self.pos = at + 2
            return _ESCAPES[esc]
        raise self.error(f"unknown escape \\{esc}", at)

    def char_class(self) -> ir.Expr:
        start = self.pos
        self.pos += 1
        negated = self.text.startswith("^", self.pos)
        if negated:
            self.pos += 1
        ranges = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise self.error("unterminated character class", start)
            if self.text[self.pos] == "]":
                self.pos += 1
                break
            lo = self.char()
            hi = lo
            if self.text.startswith("-", self.pos) and not self.text.startswith("-]", self.pos):
                self.pos += 1
                if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                    raise self.error("unterminated character class", start)
                hi = self.char()
                if ord(hi) < ord(lo):
                    raise self.error(f"character range {lo!r}-{hi!r} is reversed", start)
            ranges.append((ord(lo), ord(hi)))
        return ir.CharClass.of(ranges, negated=negated)
