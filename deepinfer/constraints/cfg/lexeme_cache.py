"""A process-wide cache of lexeme DFAs, shared by every grammar compiled.

Why: JSON Schemas (and EBNF grammars) lower to the same lexical pieces again
and again (JSON strings, numbers, integers, whitespace, the generic value's
punctuation); building each one's DFA (subset construction + minimization, in
Python) was most of a context-free compile. A lexeme's DFA depends only on its
expression, the regular rules it refers to (transitively) and the DFA limits,
so that triple is the key; entries are immutable (`Lexeme` tables are never
written after construction), so sharing them between grammars is safe.

Bounded by total NFA states (what unbuilt lexemes hold; DFAs are smaller), evicting
least recently used entries. Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .. import ir

MAX_STATES = 100_000   # total NFA states of the lexemes kept (unbuilt ones hold their NFA)
MAX_ENTRIES = 20_000

_lock = threading.Lock()
_entries: OrderedDict = OrderedDict()   # key -> (Lexeme | None, nullable, states)
_states = 0


def lexeme_key(expr: ir.Expr, regular_rules: dict[str, ir.Expr], limits) -> tuple:
    """(expr, the referenced regular rules as sorted (name, body) pairs, limits)."""
    names: set[str] = set()
    todo = [expr]
    while todo:
        for node in ir.walk_unique(todo.pop()):
            if isinstance(node, ir.RuleRef) and node.name not in names:
                names.add(node.name)
                body = regular_rules.get(node.name)
                if body is not None:
                    todo.append(body)
    refs = tuple(sorted((n, regular_rules.get(n)) for n in names))
    return (expr, refs, limits.max_nfa_states, limits.max_dfa_states)


def get(key: tuple):
    """(Lexeme | None, nullable) or None on a miss."""
    with _lock:
        hit = _entries.get(key)
        if hit is None:
            return None
        _entries.move_to_end(key)
        return hit[0], hit[1]


def put(key: tuple, lexeme, nullable: bool) -> None:
    global _states
    states = 0 if lexeme is None else lexeme.size_hint  # NFA states: DFAs are built lazily
    with _lock:
        if key in _entries:
            return
        _entries[key] = (lexeme, nullable, states)
        _states += states
        while _entries and (_states > MAX_STATES or len(_entries) > MAX_ENTRIES):
            _, (_, _, gone) = _entries.popitem(last=False)
            _states -= gone


def clear() -> None:
    """Forget everything (tests measuring cold compiles)."""
    global _states
    with _lock:
        _entries.clear()
        _states = 0
