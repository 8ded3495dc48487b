"""One lexeme: a non-empty regular language whose byte automata are built on first use.

Why lazy: a context-free compile used to determinize and minimize every
lexeme of the grammar (in Python, 1-20 ms each), though the first mask needs
only the lexemes expected at the start, and many (optional properties, rare
branches) are never reached. The compile builds each lexeme's NFA (so size
limits still fail the compile) and reads from it what the parser needs up
front: whether the lexeme matches ε, whether it matches anything else, and
its possible first bytes (for FOLLOW sets, an over-approximation is only a
weaker filter). The DFA (`trans`, `accepting`, `start`, `digest`, `rows`,
`accept_list`) appears as plain attributes on first access (`__getattr__`),
so the per-byte hot path pays nothing once built.

A small lexeme (by regular/facts.py's exact NFA state count) does not even keep an NFA
until then: its facts come from the IR, and the NFA is built with the DFA.

A DFA (or lazy NFA) that fails to build at that point (its limits) becomes the empty
language: masks stay sound (nothing is allowed through it) and the failure is
recorded in `Lexeme.error`. Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import ir
from ..regular.dfa import Limits, determinize, determinize_expr, literal_set_dfa
from ..errors import ConstraintError
from ..regular.gcpause import gc_paused
from ..regular.nfa import Nfa
from .composed import composed_dfa

EAGER_NFA_STATES = 4000  # bigger NFAs are determinized at compile time (limits fail the compile)
_DFA_ATTRS = frozenset({"trans", "accepting", "start", "digest", "rows", "accept_list"})


class Lexeme:
    """expr minus ε over bytes; the DFA tables are built on first access."""

    def __init__(self, expr: ir.Expr, nfa: Nfa | None, limits: Limits, first_bytes: np.ndarray,
                 nullable: bool, rules: dict[str, ir.Expr] | None = None, size_hint: int = 0) -> None:
        """nfa None: built on first use from `rules` (the regular rules expr refers to)."""
        self.expr = expr
        self.first_bytes = first_bytes      # bool [256]: bytes a match can start with
        self.nullable = nullable            # expr itself also matches ε (excluded here)
        self.size_hint = len(nfa.eps) if nfa is not None else size_hint
        self.error: ConstraintError | None = None  # why its DFA failed to build
        self._nfa, self._limits, self._rules = nfa, limits, rules
        self._lock = threading.Lock()

    def __getattr__(self, name: str):
        if name not in _DFA_ATTRS:
            raise AttributeError(name)
        self.build()
        return self.__dict__[name]

    def build(self) -> None:
        with self._lock:
            if "trans" in self.__dict__:
                return
            try:
                # `,` ws `"` key-trie ...: from a shared head and rest (composed.py), not a
                # subset construction of its own (the rest recurs in the same schema)
                parts = None if self.nullable else composed_dfa(self.expr, self._limits)
                texts = None if parts is not None else _literal_set(self.expr)
                start = 0
                if parts is not None:
                    trans, accepting, digest, start = parts
                elif texts is not None:  # an enum's values: their trie (dfa.literal_set_dfa)
                    dfa = literal_set_dfa(texts)
                    trans, accepting, digest = dfa.trans, dfa.accepting, dfa.digest
                else:
                    with gc_paused():  # runs inside a mask or advance step: no full GC pass there
                        if self._nfa is not None:
                            dfa = determinize(self._nfa, self._limits)
                        else:
                            rules = dict(self._rules or {})
                            rules["__lexeme__"] = self.expr
                            dfa = determinize_expr(ir.Grammar(rules, "__lexeme__"), self._limits)
                    trans, accepting, digest = dfa.trans, dfa.accepting, dfa.digest
            except ConstraintError as exc:  # too large after all: match nothing (sound)
                self.error = exc.with_traceback(None)
                trans, accepting = np.full((1, 256), -1, np.int32), np.zeros(1, bool)
                start, digest = 0, "empty"
            if self.nullable:  # a fresh non-accepting start state with the start's moves
                trans = np.vstack([trans, trans[start:start + 1]])
                accepting = np.append(accepting, False)
                start, digest = len(trans) - 1, digest + "+"
            trans = np.ascontiguousarray(trans, dtype=np.int32)
            trans.flags.writeable = False  # shared between grammars (lexeme_cache)
            self._nfa = self._rules = None
            # Rows are converted on first visit, as tuples in a dict: most states of a big
            # lexeme are never stepped through, and tuples of ints drop out of the
            # cyclic GC (lists of 256 items, or of one None / bool per state, made every
            # collection that sees them slow).
            self.__dict__.update(accepting=accepting, start=start, digest=digest,
                                 rows={}, accept_list=tuple(accepting.tolist()))
            self.__dict__["trans"] = trans  # last: its presence means "built"

    def row(self, q: int) -> tuple:
        got = self.rows.get(q)
        if got is None:
            got = self.rows[q] = tuple(self.trans[q].tolist())
        return got


def _literal_set(expr) -> list[bytes] | None:
    """The values of an alternation of non-empty literals, as UTF-8, else None."""
    if not isinstance(expr, ir.Alt) or not all(isinstance(i, ir.Literal) and i.text for i in expr.items):
        return None
    return [item.text.encode("utf-8") for item in expr.items]


def analyze(nfa: Nfa) -> tuple[bool, bool, np.ndarray]:
    """(matches ε, matches a non-empty string, bool [256] first bytes of those).

    Forward search over (state, read a byte yet?) pairs, restricted to states
    from which the accept state is reachable, so dead branches add no bytes."""
    live = _co_reachable(nfa)
    first = np.zeros(256, dtype=bool)
    if not live[nfa.start]:
        return False, False, first
    seen = {(nfa.start, False)}
    stack = [(nfa.start, False)]
    nullable = nonempty = False
    while stack:
        s, read = stack.pop()
        if s == nfa.accept:
            nonempty |= read
            nullable |= not read
        for t in nfa.eps[s]:
            if live[t] and (t, read) not in seen:
                seen.add((t, read))
                stack.append((t, read))
        for lo, hi, t in nfa.edges[s]:
            if live[t]:
                if not read:
                    first[lo:hi + 1] = True
                if (t, True) not in seen:
                    seen.add((t, True))
                    stack.append((t, True))
    return nullable, nonempty, first


def _co_reachable(nfa: Nfa) -> list[bool]:
    back: list[list[int]] = [[] for _ in nfa.eps]
    for s, targets in enumerate(nfa.eps):
        for t in targets:
            back[t].append(s)
    for s, edges in enumerate(nfa.edges):
        for _, _, t in edges:
            back[t].append(s)
    live = [False] * len(nfa.eps)
    live[nfa.accept] = True
    stack = [nfa.accept]
    while stack:
        for s in back[stack.pop()]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    return live
