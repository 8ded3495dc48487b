"""The DFA of a counted repetition and a literal, X{lo,hi} t, laid out directly.

A string with maxLength is the lexeme `"` X{lo,hi} `"` (X: one JSON string character, an
escape or a UTF-8 sequence), and parts.py builds it from the head `"` and the rest
X{lo,hi} `"`. Determinizing that rest went through a Python NFA of hi copies of X, the
subset construction and minimization: ~2 ms per distinct bound, inside the mask step that
first reaches the property. Here X's own DFA (a handful of states, cached) is copied hi
times instead: copy c reads the (c+1)-th X, its accepting state is the start of copy c + 1,
and the start of every copy c >= lo also reads t. Exact when X is prefix-free (no match of
X goes on to a longer one: its accepting states read nothing, as for one character) and
does not match the empty string, and no X starts with t's first byte; otherwise None and
the caller determinizes. The result is trimmed and minimal (counts and X's states are all
told apart), start 0. Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import ir
from ..dfa import Limits, determinize
from ..errors import ConstraintError
from ..nfa import build_nfa

MAX_COUNT = 1024  # longer repetitions are left to the subset construction (and its limits)
MAX_ITEMS = 256   # item DFAs kept (a schema's strings share a few character expressions)
_items: dict = {}   # X -> (trans, accepting) of its minimal DFA, or None when not usable
_lock = threading.Lock()


def counted_dfa(rest, limits: Limits) -> tuple[np.ndarray, np.ndarray] | None:
    """(trans int32 [S, 256], accepting bool [S]) of rest = Seq(Repeat(X, lo, hi), Literal(t)),
    or None when rest has another shape or X does not qualify (see the module docstring)."""
    if not isinstance(rest, ir.Seq) or len(rest.items) != 2:
        return None
    rep, tail = rest.items
    if not isinstance(rep, ir.Repeat) or not isinstance(tail, ir.Literal) or not tail.text:
        return None
    lo, hi = rep.min, rep.max
    if hi is None or not 1 <= hi <= MAX_COUNT or lo > hi:
        return None
    item = _item_dfa(rep.item, limits)
    text = tail.text.encode("utf-8")
    if item is None or item[0][0, text[0]] >= 0:
        return None
    inner = len(item[0]) - 1  # X's states but its one accepting state (the last)
    if hi * inner + len(text) + 1 > limits.max_dfa_states:
        return None
    return _layout(item[0], inner, lo, hi, text)


def _layout(x_trans: np.ndarray, inner: int, lo: int, hi: int, text: bytes):
    copies = hi * inner                    # states of copies 0..hi-1; copy hi is one state
    size = copies + 1 + len(text)          # + copy hi's start, the literal's chain, the end
    trans = np.full((size, 256), -1, dtype=np.int32)
    block = x_trans[:inner]                # [inner, 256]: X's targets; `inner` = "X done"
    offsets = (np.arange(hi, dtype=np.int32) * inner)[:, None, None]  # [hi, 1, 1]
    # copy c: X's own targets, and "X done" (index inner) lands on copy c + 1's start
    trans[:copies] = np.where(block[None] >= 0, block[None] + offsets, -1).reshape(copies, 256)
    starts = np.arange(lo, hi + 1) * inner  # copy starts that may end the repetition
    chain = copies + 1                     # the literal's states after its first byte
    trans[starts, text[0]] = chain if len(text) > 1 else size - 1
    for i in range(1, len(text)):
        trans[chain + i - 1, text[i]] = chain + i if i < len(text) - 1 else size - 1
    accepting = np.zeros(size, dtype=bool)
    accepting[-1] = True
    trans.flags.writeable = False
    return trans, accepting


def _item_dfa(item, limits: Limits):
    """X's minimal DFA renumbered with its single accepting state last, or None when X
    matches ε, is not prefix-free, or does not build (cached per X)."""
    with _lock:
        if item in _items:
            return _items[item]
    got = None
    try:
        dfa = determinize(build_nfa(item, limits.max_nfa_states), limits)
    except ConstraintError:
        dfa = None
    if dfa is not None:
        trans, accepting = dfa.trans, dfa.accepting
        ends = np.flatnonzero(accepting)
        if not accepting[0] and len(ends) == 1 and (trans[ends[0]] < 0).all():
            order = np.concatenate([np.flatnonzero(~accepting), ends])  # start 0 stays first
            rank = np.empty(len(order), dtype=np.int32)
            rank[order] = np.arange(len(order), dtype=np.int32)
            renumbered = np.where(trans[order] >= 0, rank[np.maximum(trans[order], 0)], -1)
            got = (renumbered.astype(np.int32), accepting[order])
    with _lock:
        if len(_items) >= MAX_ITEMS:
            _items.clear()
        return _items.setdefault(item, got)
