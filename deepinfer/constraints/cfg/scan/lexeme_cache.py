"""A process-wide cache of lexeme DFAs, shared by every grammar compiled.

Why: JSON Schemas (and EBNF grammars) lower to the same lexical pieces again
and again (JSON strings, numbers, integers, whitespace, the generic value's
punctuation); building each one's DFA (subset construction + minimization, in
Python) was most of a context-free compile. A lexeme's DFA depends only on its
expression, the regular rules it refers to (transitively) and the DFA limits,
so that triple is the key; entries are immutable (`Lexeme` tables are never
written after construction), so sharing them between grammars is safe.

Bounded by total NFA states (a lexeme's size, built or not), as a segmented LRU (see
below). Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ... import ir

MAX_STATES = 100_000   # total NFA states of the lexemes kept (their size, built or not)
MAX_ENTRIES = 20_000
PROTECTED_SHARE = 0.5  # of MAX_STATES: lexemes asked for again (by a later grammar)

# Segmented LRU: a new lexeme enters `_probation`; a hit moves it to `_protected`. Eviction
# takes the probation side first. Why: one big schema's one-off lexemes (thousands of NFA
# states each) used to flush the pieces every schema shares (`"{" ws`, strings, numbers),
# which were then rebuilt inside first masks.
_lock = threading.Lock()
_probation: OrderedDict = OrderedDict()   # key -> (Lexeme | None, nullable, states)
_protected: OrderedDict = OrderedDict()
_states = [0, 0]                          # probation, protected


def lexeme_key(expr: ir.Expr, regular_rules: dict[str, ir.Expr], limits, referenced=None) -> tuple:
    """(expr, the referenced regular rules as sorted (name, body) pairs, limits).

    `referenced(name)`, when given, names the rules a rule's body refers to directly
    (ir.Grammar.referenced_rules, memoized per body): rule bodies are then not walked
    again for every lexeme that mentions them (the JSON value and string rules were
    walked once per lexeme)."""
    names: set[str] = set()
    pending = list(ir.rule_refs(expr))  # kept on each IR node: no walk of the expression
    while pending:
        name = pending.pop()
        if name in names:
            continue
        names.add(name)
        if name in regular_rules:  # follow its body's references (non-regular ones are leaves)
            pending.extend(referenced(name) if referenced is not None else
                           ir.rule_refs(regular_rules[name]))
    refs = tuple(sorted((n, regular_rules.get(n)) for n in names))
    return (expr, refs, limits.max_nfa_states, limits.max_dfa_states)


def get(key: tuple):
    """(Lexeme | None, nullable) or None on a miss."""
    with _lock:
        hit = _protected.get(key)
        if hit is not None:
            _protected.move_to_end(key)
            return hit[0], hit[1]
        hit = _probation.pop(key, None)
        if hit is None:
            return None
        _states[0] -= hit[2]
        _protected[key] = hit
        _states[1] += hit[2]
        while _states[1] > MAX_STATES * PROTECTED_SHARE and len(_protected) > 1:
            old, entry = _protected.popitem(last=False)  # demoted, not dropped
            _states[1] -= entry[2]
            _probation[old] = entry
            _states[0] += entry[2]
        _evict()
        return hit[0], hit[1]


def put(key: tuple, lexeme, nullable: bool) -> None:
    states = 0 if lexeme is None else lexeme.size_hint
    with _lock:
        if key in _probation or key in _protected:
            return
        _probation[key] = (lexeme, nullable, states)
        _states[0] += states
        _evict()


def _evict() -> None:
    while _probation and (sum(_states) > MAX_STATES or len(_probation) + len(_protected) > MAX_ENTRIES):
        _, (_, _, gone) = _probation.popitem(last=False)
        _states[0] -= gone
    while _protected and (sum(_states) > MAX_STATES or len(_protected) > MAX_ENTRIES):
        _, (_, _, gone) = _protected.popitem(last=False)
        _states[1] -= gone


def clear() -> None:
    """Forget everything (tests measuring cold compiles)."""
    with _lock:
        _probation.clear()
        _protected.clear()
        _states[0] = _states[1] = 0
