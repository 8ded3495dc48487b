"""Printing IR expressions back as readable EBNF (`ir.to_ebnf`, used by `str(grammar)`).

Split out of ir.py (which re-exports `to_ebnf`) to keep that module about grammars.
Knows only the IR node classes (ir_nodes.py).
"""

from __future__ import annotations

from .nodes import Alt, ByteDfa, CharClass, Expr, Literal, Repeat, RuleRef, Seq

def to_ebnf(expr: Expr) -> str:
    """Print one expression in EBNF (the same notation xgrammar prints)."""
    match expr:
        case Literal(text):
            return _quote(text)
        case CharClass():
            return _class_to_ebnf(expr)
        case RuleRef(name):
            return name
        case Seq(()):
            return '""'
        case Seq(items):
            return " ".join(_parenthesize(item, Alt) for item in items)
        case Alt(()):
            return "(/* nothing */)"
        case Alt(items):
            return " | ".join(_parenthesize(item, Alt) for item in items)
        case Repeat(item, lo, hi):
            inner = _parenthesize(item, (Seq, Alt))
            if isinstance(item, Repeat):  # "x+?" would read as a lazy quantifier
                inner = f"({inner})"
            return inner + _repeat_suffix(lo, hi)
        case ByteDfa():  # no compact expression exists (why it is a DFA): name it
            return f"(/* automaton {expr.digest[:12]}, {expr.num_states} states */)"
    raise TypeError(f"not an IR expression: {expr!r}")


def _parenthesize(expr: Expr, kinds) -> str:
    text = to_ebnf(expr)
    if isinstance(expr, kinds) and len(getattr(expr, "items", ())) > 1:
        return f"({text})"
    return text


def _repeat_suffix(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if hi is None:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


def _quote(text: str) -> str:
    return '"' + "".join(_escape_char(ch, '"') for ch in text) + '"'


def _escape_char(ch: str, special: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
    if ch in named:
        return named[ch]
    if ch in special:
        return "\\" + ch
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\x{ord(ch):02x}"
    return ch


def _class_to_ebnf(cls: CharClass) -> str:
    if cls == CharClass.any_char():
        return "[^]"
    parts = []
    for lo, hi in cls.ranges:
        a = _escape_char(chr(lo), "]-^")
        parts.append(a if lo == hi else f"{a}-{_escape_char(chr(hi), ']-^')}")
    return "[" + "".join(parts) + "]"


