"""lark's `common.lark` terminals (WS, NUMBER, ESCAPED_STRING, CNAME, ...) as IR.

Owns loading lark's own common.lark (through the lark front end) and the few
terminals whose definitions only mean something under lark's leftmost regex
match (lookbehind, lazy loops): those get the regular language lark actually
lexes. Each terminal is returned fully inlined (no references left).
"""

from __future__ import annotations

from pathlib import Path

import lark

from ... import ir
from ..regex import parse_regex

COMMON_PATH = Path(lark.__file__).parent / "grammars" / "common.lark"

# common.lark's string and comment terminals use lookbehind and lazy matching,
# which only mean something under lark's leftmost match; their languages as
# lark actually lexes them are these regular expressions.
COMMON_OVERRIDES = {
    "_STRING_INNER": r'[^\n]*',
    "_STRING_ESC_INNER": r'([^"\\\n]|\\[^\n])*',
    "ESCAPED_STRING": r'"([^"\\\n]|\\[^\n])*"',
    "C_COMMENT": r'/\*([^*]|\*+[^*/])*\*+/',
}


_COMMON_CACHE: dict[str, ir.Expr] = {}


def common_terminals(module_class) -> dict[str, ir.Expr]:
    """common.lark's terminals, each fully inlined (no references left)."""
    if not _COMMON_CACHE:
        predefined = {name: parse_regex(p) for name, p in COMMON_OVERRIDES.items()}
        module = module_class(COMMON_PATH.read_text(encoding="utf-8"), "common.lark", predefined)
        module.load()
        raw = dict(module.rules)
        for name in raw:
            _COMMON_CACHE[name] = _inline(raw[name], raw)
    return _COMMON_CACHE


def _inline(expr: ir.Expr, rules: dict[str, ir.Expr]) -> ir.Expr:
    if isinstance(expr, ir.RuleRef):
        return _inline(rules[expr.name], rules)
    if isinstance(expr, ir.Seq):
        return ir.seq(*(_inline(e, rules) for e in expr.items))
    if isinstance(expr, ir.Alt):
        return ir.alt(*(_inline(e, rules) for e in expr.items))
    if isinstance(expr, ir.Repeat):
        return ir.Repeat(_inline(expr.item, rules), expr.min, expr.max)
    return expr
