"""The grammar IR every front end lowers into: regex, JSON Schema and EBNF.

A `Grammar` is a set of named rules over Unicode text; each rule body is an
`Expr` tree (literals, character classes, sequences, alternations, bounded
repetition and references to other rules). `str(grammar)` prints it back as
readable EBNF, so users and tests can see what was compiled.

This module knows nothing about tokenizers, automata or the engine: it is the
contract between front ends (which build it) and back ends (which compile it).
The node classes live in ir_nodes.py, the simplifying constructors in
ir_build.py and printing in ir_print.py; this module re-exports them all, so
users write `ir.Seq`, `ir.seq`, `ir.to_ebnf`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConstraintError
from .build import alt, literal, optional, repeat, seq
from .nodes import EMPTY, NOTHING, Alt, ByteDfa, CharClass, Expr, Literal, Repeat, RuleRef, Seq, rule_refs
from .printing import to_ebnf
from .ranges import MAX_CODEPOINT, SURROGATES, first_surrogate


@dataclass
class Grammar:
    """Named rules plus a start rule. Rule order is kept for printing.

    `annotations` collects what a front end accepted without enforcing
    (for example unknown JSON Schema `format` values), for the user to see.
    """

    rules: dict[str, Expr]
    start: str = "start"
    annotations: list[str] = field(default_factory=list)
    # (location, what, expression) of pieces a front end wants named when a back end refuses
    # the grammar as too large (JSON Schema: a scalar's pointer and its size-prone keywords)
    sources: list = field(default_factory=list, repr=False, compare=False)
    # unused now (referenced rules are memoized on the IR nodes); kept because
    # cfg/recursion.py still copies it between grammars
    _refs: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.start not in self.rules:
            raise ValueError(f"start rule {self.start!r} is not defined")

    def __str__(self) -> str:
        width = max(len(name) for name in self.rules)
        lines = [f"{name.ljust(width)} ::= {to_ebnf(body)}" for name, body in self.rules.items()]
        return "\n".join(lines)

    def referenced_rules(self, name: str) -> set[str]:
        """Names of the rules that rule `name` refers to directly (a fresh set).

        Memoized on the body's nodes (rule_refs), so grammars that share bodies
        (split, unsplit, unrolled copies of one lowering) walk each node once."""
        return set(rule_refs(self.rules[name]))


def walk(expr: Expr):
    """Yield `expr` and all its sub-expressions, depth first."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (Seq, Alt)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Repeat):
            stack.append(node.item)


def walk_unique(expr: Expr):
    """Like walk, but each shared sub-expression (same object) only once."""
    seen: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, (Seq, Alt)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Repeat):
            stack.append(node.item)


def productive_rules(rules: dict[str, Expr]) -> set[str]:
    """Names of rules that derive at least one finite string (least fixed point)."""
    done: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in done and derives_something(body, done):
                done.add(name)
                changed = True
    return done


def derives_something(expr: Expr, productive: set[str]) -> bool:
    if isinstance(expr, Literal):
        return True
    if isinstance(expr, CharClass):
        return not expr.is_empty()
    if isinstance(expr, Seq):
        return all(derives_something(e, productive) for e in expr.items)
    if isinstance(expr, Alt):
        return any(derives_something(e, productive) for e in expr.items)
    if isinstance(expr, Repeat):
        return expr.min == 0 or derives_something(expr.item, productive)
    if isinstance(expr, RuleRef):
        return expr.name in productive
    if isinstance(expr, ByteDfa):
        return True  # trimmed: its start state reaches an accepting one
    raise TypeError(f"not an IR expression: {expr!r}")


def is_recursive(grammar: Grammar) -> bool:
    """True if a rule reachable from the start rule refers (indirectly) to itself: the grammar
    is then not regular as written, and goes to the context-free back end."""
    state: dict[str, int] = {}  # 1 = on stack, 2 = done

    def visit(name: str) -> bool:
        state[name] = 1
        for ref in rule_refs(grammar.rules[name]):  # memoized on the IR nodes
            if ref not in grammar.rules:
                raise ConstraintError(f"rule {name!r} refers to undefined rule {ref!r}")
            mark = state.get(ref)
            if mark == 1 or (mark is None and visit(ref)):
                return True
        state[name] = 2
        return False

    try:
        return visit(grammar.start)
    finally:
        visit = None  # noqa: F841 - breaks the recursive closure's cycle (freed now, not by a GC pass)
