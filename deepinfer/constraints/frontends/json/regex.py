"""Print a non-recursive IR grammar as a Python regular expression.

A debugging and testing aid for the JSON Schema front end: it lets tests check
the language of a lowered schema with `re.fullmatch`, independently of the
token-level back end. Rules are inlined; a recursive grammar raises
`ValueError`; a DFA leaf is printed through its state-eliminated expression
(regular/dfa_ops.py). Knows only the IR.
"""

from __future__ import annotations

import re

from deepinfer.constraints import ir
from deepinfer.constraints.regular import dfa_ops


def grammar_to_regex(grammar: ir.Grammar, max_len: int = 5_000_000) -> str:
    cache: dict[str, str] = {}
    active: set[str] = set()

    def rule(name: str) -> str:
        if name in cache:
            return cache[name]
        if name in active:
            raise ValueError(f"rule {name!r} is recursive")
        active.add(name)
        text = expr(grammar.rules[name])
        active.discard(name)
        if len(text) > max_len:
            raise ValueError("regex too large")
        cache[name] = text
        return text

    def expr(e: ir.Expr) -> str:
        match e:
            case ir.Literal(text):
                return re.escape(text)
            case ir.CharClass(ranges):
                if not ranges:
                    return "(?!)"
                return "[" + "".join(_range(lo, hi) for lo, hi in ranges) + "]"
            case ir.Seq(items):
                return "".join(_group(expr(i)) if isinstance(i, ir.Alt) else expr(i) for i in items)
            case ir.Alt(items):
                return "(?:" + "|".join(expr(i) for i in items) + ")" if items else "(?!)"
            case ir.Repeat(item, lo, hi):
                q = f"{{{lo},{'' if hi is None else hi}}}"
                return "(?:" + expr(item) + ")" + q
            case ir.RuleRef(name):
                return "(?:" + rule(name) + ")"
            case ir.ByteDfa():  # back to an expression (slow, may fail: DfaOpError; tests only)
                return "(?:" + expr(dfa_ops.to_expr(dfa_ops.expr_dfa(e))) + ")"
        raise TypeError(repr(e))

    return rule(grammar.start)


def _group(text: str) -> str:
    return text if text.startswith("(?:") else "(?:" + text + ")"


def _esc(cp: int) -> str:
    return "\\" + chr(cp) if chr(cp) in "\\]^-[" else chr(cp) if 0x20 <= cp < 0x7F else f"\\U{cp:08x}"


def _range(lo: int, hi: int) -> str:
    return _esc(lo) if lo == hi else f"{_esc(lo)}-{_esc(hi)}"
