"""The semantic checks every EBNF grammar passes before it reaches a back end, and where things are.

Owns `SourceMap` (the line and column of each rule's definition and first reference, which the
syntax front ends record while parsing), `check_grammar` (undefined rules, a missing start rule,
rules that derive no finite string, an empty language; each reported at its line and column)
and `prune_unreachable`. Shared by both syntaxes (gbnf.py, lark.py). Knows nothing about
automata, parsers or tokenizers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import ir
from ...errors import ConstraintError


@dataclass
class SourceMap:
    """Where things are in the grammar text, for error messages (1-based)."""

    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    references: dict[str, tuple[int, int]] = field(default_factory=dict)  # first use

    def where(self, name: str) -> str:
        pos = self.definitions.get(name) or self.references.get(name)
        return f"line {pos[0]} column {pos[1]}" if pos else "(position unknown)"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_grammar(grammar: ir.Grammar, source: SourceMap, start_label: str) -> None:
    """Raise ConstraintError if a rule is undefined, unproductive, or the language is empty."""
    rules = grammar.rules
    for name in rules:
        for ref in grammar.referenced_rules(name):
            if ref not in rules:
                raise ConstraintError(f"undefined rule {ref!r} used at {_at(source.references, ref)}")
    productive = ir.productive_rules(rules)
    reachable = reachable_rules(grammar)
    for name in rules:
        if name in reachable and name not in productive and name != grammar.start:
            raise ConstraintError(f"rule {name!r} at {source.where(name)} derives nothing: "
                                  "it has no finite derivation (infinite recursion or an empty class)")
    if grammar.start not in productive:
        raise ConstraintError(f"the grammar's language is empty: {start_label} at "
                              f"{source.where(start_label)} derives no string")


def _at(table: dict[str, tuple[int, int]], name: str) -> str:
    pos = table.get(name)
    return f"line {pos[0]} column {pos[1]}" if pos else "(position unknown)"


def reachable_rules(grammar: ir.Grammar) -> set[str]:
    seen, todo = {grammar.start}, [grammar.start]
    while todo:
        for ref in grammar.referenced_rules(todo.pop()):
            if ref not in seen and ref in grammar.rules:
                seen.add(ref)
                todo.append(ref)
    return seen


def prune_unreachable(grammar: ir.Grammar) -> ir.Grammar:
    """The same grammar without rules the start rule never reaches (order kept)."""
    keep = reachable_rules(grammar)
    rules = {n: b for n, b in grammar.rules.items() if n in keep}
    return ir.Grammar(rules, grammar.start, list(grammar.annotations))
