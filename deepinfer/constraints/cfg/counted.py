"""The DFA of a counted repetition and a literal, X{lo,hi} t, laid out directly.

A string with maxLength is the lexeme `"` X{lo,hi} `"` (X: one JSON string character, an
escape or a UTF-8 sequence), and composed.py builds it from the head `"` and the rest X{lo,hi}
`"`. Determinizing that rest went through a Python NFA of hi copies of X, the subset
construction and minimization: 2-13 ms for bounds up to 45, 0.1-0.7 s past 300 characters,
inside the mask step that first reaches the property (or the compile). Here X's own DFA (a
handful of states, cached) is copied hi times instead: copy c reads the (c+1)-th X, its
accepting state is the start of copy c + 1, and the start of every copy c >= lo also reads
t. Exact when X is prefix-free (no match of X goes on to a longer one: its accepting states
read nothing, as for one character) and does not match the empty string, and no X starts
with t's first byte; otherwise None and the caller determinizes. The result is trimmed and
minimal (counts and X's states are all told apart), start 0.
Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import ir
from ..regular.dfa import Limits, determinize_expr
from ..errors import ConstraintError

MAX_COUNT = 1 << 16  # counts laid out at most (the DFA-state limit applies too)
MAX_ITEMS = 256   # item DFAs kept (a schema's strings share a few character expressions)
_items: dict = {}   # (X, limits) -> (trans, accepting) of its minimal DFA, or None when not usable
_lock = threading.Lock()


def counted_dfa(rest, limits: Limits) -> tuple[np.ndarray, np.ndarray] | None:
    """(trans int32 [S, 256], accepting bool [S]) of rest = Seq(counted, Literal(t)), where
    counted is X{lo,hi}, or a long string's X{128} Y{lo2,hi2} (optionally or'ed with X{lo,128});
    None when rest has another shape or an item does not qualify (see the module docstring)."""
    if not isinstance(rest, ir.Seq) or len(rest.items) not in (2, 3):
        return None
    *body, tail = rest.items  # three items: a long string's X{128} Y{lo2,hi2}, flattened
    counted = body[0] if len(body) == 1 else ir.Seq(tuple(body))
    if not isinstance(tail, ir.Literal) or not tail.text:
        return None
    shape = _segments(counted)
    if shape is None:
        return None
    segments, ends = shape
    text = tail.text.encode("utf-8")
    items = []
    for item, copies in segments:
        got = _item_dfa(item, limits)
        if got is None or got[0][0, text[0]] >= 0:
            return None
        items.append((got[0], copies))
    if sum(copies * (len(t) - 1) for t, copies in items) + len(text) + 1 > limits.max_dfa_states:
        return None
    return _layout(items, ends, text)


def _segments(expr):
    """([(item, copies)], [(first, last)] counts that may end) for the counted shapes, or None."""
    if isinstance(expr, ir.Repeat):
        if expr.max is None or not 1 <= expr.max <= MAX_COUNT or expr.min > expr.max:
            return None
        return [(expr.item, expr.max)], [(expr.min, expr.max)]
    if isinstance(expr, ir.Seq) and len(expr.items) == 2:  # X{n} Y{lo,hi}
        first, then = expr.items
        then = then if isinstance(then, ir.Repeat) else ir.Repeat(then, 1, 1)  # Y{1} is Y
        if (isinstance(first, ir.Repeat) and first.min == first.max and first.max
                and then.max is not None
                and first.max + then.max <= MAX_COUNT and then.min <= then.max):
            n = first.max
            return [(first.item, n), (then.item, then.max)], [(n + then.min, n + then.max)]
        return None
    if isinstance(expr, ir.Alt) and len(expr.items) == 2:  # X{lo,n} | X{n} Y{lo2,hi2}
        short, long = expr.items
        got = _segments(long) if isinstance(long, ir.Seq) else None
        if (got is None or not isinstance(short, ir.Repeat) or short.item != got[0][0][0]
                or short.max != got[0][0][1] or short.min > short.max):
            return None
        return got[0], [(short.min, short.max)] + got[1]
    return None


def _layout(items: list, ends: list, text: bytes):
    """items: [(X's table, copies)] in order; ends: count ranges that may read `text`."""
    inners = [len(t) - 1 for t, _ in items]
    starts = [0]  # the start state of every count 0..total
    for (_, copies), inner in zip(items, inners):
        starts.extend(starts[-1] + inner * np.arange(1, copies + 1))
    starts = np.asarray(starts, dtype=np.int64)
    count_state = int(starts[-1])          # the last count's start: reads only `text`
    size = count_state + len(text) + 1     # + the literal's chain after its first byte, the end
    trans = np.full((size, 256), -1, dtype=np.int32)
    at, count = 0, 0
    for (x_trans, copies), inner in zip(items, inners):
        block = x_trans[:inner]            # [inner, 256]: X's targets; `inner` = "X done"
        offsets = starts[count:count + copies, None, None].astype(np.int32)  # [copies, 1, 1]
        # each copy: X's own targets, and "X done" lands on the next count's start
        trans[at:at + copies * inner] = np.where(block[None] >= 0, block[None] + offsets, -1).reshape(-1, 256)
        at, count = at + copies * inner, count + copies
    chain = count_state + 1
    for first, last in ends:
        trans[starts[first:last + 1], text[0]] = chain if len(text) > 1 else size - 1
    for i in range(1, len(text)):
        trans[chain + i - 1, text[i]] = chain + i if i < len(text) - 1 else size - 1
    accepting = np.zeros(size, dtype=bool)
    accepting[-1] = True
    trans.flags.writeable = False
    return trans, accepting


def _item_dfa(item, limits: Limits):
    """X's minimal DFA renumbered with its single accepting state last, or None when X
    matches ε, is not prefix-free, or does not build (cached per X)."""
    key = (item, limits.max_nfa_states, limits.max_dfa_states)  # X may build under some limits only
    with _lock:
        if key in _items:
            return _items[key]
    got = None
    try:
        dfa = determinize_expr(item, limits)
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
        return _items.setdefault(key, got)
