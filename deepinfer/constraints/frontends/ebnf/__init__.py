"""EBNF grammars (lark or GBNF syntax) -> IR.

Owns the entry point the compiler calls (`lower_grammar`): the choice of syntax
(lark.py, gbnf.py) and the by-name library lookup (library.py). The semantic checks
both syntaxes share, with the line and column of what fails them, are checks.py's.
Knows nothing about automata, parsers or tokenizers.
"""

from __future__ import annotations

from ... import ir
from ...errors import ConstraintError
from .gbnf import lower_gbnf
from .lark import lower_lark
from .library import load_library_grammar

SYNTAXES = ("lark", "gbnf")


def lower_grammar(text: str | None = None, syntax: str = "lark", start: str | None = None,
                  name: str | None = None) -> ir.Grammar:
    """Parse a grammar (or load a shipped one by `name`) and return its IR.

    `start` defaults to "start" for lark and "root" for GBNF. Raises
    ConstraintError with line and column for every problem.
    """
    if name is not None:
        if text is not None:
            raise ConstraintError("give either a grammar text or a library name, not both")
        text, syntax = load_library_grammar(name, syntax)
    if not isinstance(text, str):
        raise ConstraintError(f"grammar must be a string, not {type(text).__name__}")
    if syntax == "lark":
        return lower_lark(text, start or "start")
    if syntax in ("gbnf", "ebnf"):
        return lower_gbnf(text, start or "root")
    raise ConstraintError(f"unknown grammar syntax {syntax!r}; expected one of {SYNTAXES}")
