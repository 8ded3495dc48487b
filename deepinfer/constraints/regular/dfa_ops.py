"""Boolean operations on byte DFAs of text languages, and a way back to the IR.

Owns: the DFA of one IR expression over Unicode text (`expr_dfa`), product
intersection (`intersect`), complement within a universe such as "all UTF-8
text" (`complement`), emptiness, and `to_expr`: a DFA back to an IR
expression over characters (UTF-8 byte paths regrouped into code point ranges,
then state elimination), so front ends can use `pattern ∧ format`,
`¬pattern` and similar languages inside ordinary grammars; `to_ir` falls back
to the DFA itself as an IR leaf (`ir.ByteDfa`, `as_leaf`) where no compact
expression exists. Every operation
is exact. Works on `dfa.Dfa` tables (read-only; trimming, minimization and
canonical numbering are dfa.py's). Knows nothing about JSON or tokens.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from .. import ir
from .dfa import Dfa, Limits, canonical_order, determinize_expr, minimize, trim
from ..errors import ConstraintError, Reason

MAX_PRODUCT_STATES = 4_000
MAX_EXPR_NODES = 20_000  # to_expr gives up past this many IR nodes (state elimination can blow up)
_LIMITS = Limits(max_nfa_states=200_000, max_dfa_states=MAX_PRODUCT_STATES, time_budget_s=5.0)


class DfaOpError(ValueError):
    """An operation whose result would be too large."""


def expr_dfa(expr: ir.Expr) -> Dfa | None:
    """The minimal DFA of an IR expression over text (None: the empty language)."""
    if expr == ir.NOTHING:
        return None
    if isinstance(expr, ir.ByteDfa):
        return Dfa(expr.trans, expr.accepting, expr.digest)
    try:
        return determinize_expr(expr, _LIMITS)
    except ConstraintError as exc:
        if exc.reason is Reason.EMPTY:
            return None
        raise DfaOpError(str(exc)) from None


def as_leaf(dfa: Dfa | None) -> ir.Expr:
    """The DFA as an IR leaf (ir.ByteDfa; NOTHING for the empty language)."""
    if dfa is None:
        return ir.NOTHING
    if not dfa.digest:
        dfa = finish(dfa.trans, dfa.accepting)
    trans, accepting = dfa.trans.copy(), dfa.accepting.copy()
    trans.flags.writeable = accepting.flags.writeable = False
    return ir.ByteDfa(trans, accepting, dfa.digest)


def finish(table: np.ndarray, accepting: np.ndarray) -> Dfa | None:
    """A [S, 256] table (start 0, -1 dead) trimmed, minimized and numbered canonically,
    with its digest (None: the empty language)."""
    try:
        table, accepting = trim(table, accepting)
    except ConstraintError as exc:
        if exc.reason is not Reason.EMPTY:
            raise
        return None
    table, accepting, start = minimize(table, accepting)
    table, accepting = canonical_order(table, accepting, start)
    table = np.ascontiguousarray(table, dtype=np.int32)
    digest = hashlib.blake2b(table.tobytes() + accepting.tobytes(), digest_size=16).hexdigest()
    return Dfa(table, accepting, digest)


def _product(a: Dfa, b: Dfa, accept, limit: int = MAX_PRODUCT_STATES) -> Dfa | None:
    """Reachable product of two DFAs made total with a dead state each; `accept(x, y)`
    decides acceptance from the components' accepting flags (bool arrays, elementwise).
    Breadth first, one vectorized step per layer (a length counter's product has hundreds of
    layers of a few dozen states; per state it was ~100 us of Python)."""
    ta = np.vstack([a.trans, np.full((1, 256), -1, np.int32)])
    tb = np.vstack([b.trans, np.full((1, 256), -1, np.int32)])
    dead_a, dead_b = a.num_states, b.num_states
    ta[ta < 0] = dead_a
    tb[tb < 0] = dead_b
    acc_a = np.append(a.accepting, False)
    acc_b = np.append(b.accepting, False)
    width = dead_b + 1
    ids = {0: 0}
    order = [0]
    rows = []
    frontier = np.zeros(1, dtype=np.int64)
    while frontier.size:
        xs, ys = np.divmod(frontier, width)
        keys = ta[xs].astype(np.int64) * width + tb[ys]                 # [F, 256]
        uniq, inverse = np.unique(keys, return_inverse=True)
        targets = np.empty(len(uniq), dtype=np.int32)
        new = []
        for n, k in enumerate(uniq.tolist()):
            j = ids.get(k)
            if j is None:
                if len(order) >= limit:
                    raise DfaOpError(f"product automaton exceeds {limit} states")
                j = ids[k] = len(order)
                order.append(k)
                new.append(k)
            targets[n] = j
        rows.append(targets[inverse.reshape(keys.shape)])
        frontier = np.array(new, dtype=np.int64)
    table = np.concatenate(rows).astype(np.int32, copy=False)
    xs, ys = np.divmod(np.array(order, dtype=np.int64), width)
    return finish(table, np.asarray(accept(acc_a[xs], acc_b[ys]), dtype=bool))


def intersect(a: Dfa | None, b: Dfa | None, limit: int = MAX_PRODUCT_STATES) -> Dfa | None:
    if a is None or b is None:
        return None
    return _product(a, b, lambda x, y: x & y, limit)


def complement(a: Dfa | None, universe: Dfa) -> Dfa | None:
    """universe minus L(a)."""
    if a is None:
        return universe
    return _product(universe, a, lambda x, y: x & ~y)


def minus(a: Dfa | None, b: Dfa | None, limit: int = MAX_PRODUCT_STATES) -> Dfa | None:
    """L(a) minus L(b): one product, where intersect(a, complement(b, any_text())) takes two."""
    if a is None or b is None:
        return a
    return _product(a, b, lambda x, y: x & ~y, limit)


@functools.cache
def any_text() -> Dfa:
    """Every Unicode text (the universe of `complement` for string languages)."""
    return expr_dfa(ir.repeat(ir.CharClass.any_char()))


def length_dfa(lo: int, hi: int | None) -> Dfa:
    """The byte strings with lo..hi UTF-8 lead bytes (hi None: no maximum), one state per count:
    a character is counted at its first byte, continuation bytes (0x80-0xBF) stay. Built
    directly: `.{lo,hi}` determinized is ~19 states per character. Intersected with a text
    language (valid UTF-8, accepting only between characters) it bounds the characters."""
    top = hi if hi is not None else lo  # counts past lo saturate when there is no maximum
    counts = np.arange(top + 1)
    after = counts + 1 if hi is not None else np.minimum(counts + 1, top)
    table = np.full((top + 1, 256), -1, dtype=np.int32)
    table[:] = np.where(after <= top, after, -1)[:, None]
    table[:, 0x80:0xC0] = counts[:, None]
    accepting = counts >= lo
    return Dfa(table, accepting)


def is_empty(a: Dfa | None) -> bool:
    return a is None


# ------------------------------------------------------------------ to_expr

def _codepoint_targets(trans: np.ndarray, state: int, cont_cache: dict) -> np.ndarray:
    """int32 [0x110000]: the state after each code point's UTF-8 bytes from `state` (-1 dead)."""
    out = np.full(0x110000, -1, dtype=np.int32)
    row = trans[state]
    out[:0x80] = row[:0x80]

    def cont(t: int, depth: int) -> np.ndarray:  # targets of depth continuation bytes, [64**depth]
        key = (t, depth)
        got = cont_cache.get(key)
        if got is None:
            if t < 0:
                got = np.full(64 ** depth, -1, dtype=np.int32)
            elif depth == 1:
                got = trans[t, 0x80:0xC0].astype(np.int32)
            else:
                got = np.concatenate([cont(int(u), depth - 1) for u in trans[t, 0x80:0xC0]])
            cont_cache[key] = got
        return got

    for lead, depth, base, lo in ((range(0xC2, 0xE0), 1, 0x1F, 0x80), (range(0xE0, 0xF0), 2, 0x0F, 0x800),
                                  (range(0xF0, 0xF5), 3, 0x07, 0x10000)):
        for b in lead:
            t = int(row[b])
            if t < 0:
                continue
            block = cont(t, depth)
            start = (b & base) << (6 * depth)
            first = max(start, lo)
            last = min(start + len(block), 0x110000)
            out[first:last] = block[first - start:last - start]
    out[0xD800:0xE000] = -1
    return out


def _char_edges(dfa: Dfa) -> list[dict[int, ir.Expr]]:
    """Per state: target -> CharClass of the code points leading there."""
    cache: dict = {}
    edges = []
    for s in range(dfa.num_states):
        targets = _codepoint_targets(dfa.trans, s, cache)
        cuts = np.flatnonzero(np.diff(targets)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(targets)]]) - 1
        by_target: dict[int, list] = {}
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            t = int(targets[lo])
            if t >= 0:
                by_target.setdefault(t, []).append((lo, hi))
        edges.append({t: ir.CharClass.of(r) for t, r in by_target.items()})
    return edges


def to_expr(dfa: Dfa | None) -> ir.Expr:
    """An IR expression over characters with the DFA's language (state elimination)."""
    if dfa is None:
        return ir.NOTHING
    n = dfa.num_states
    start, final = n, n + 1
    out: list[dict[int, ir.Expr]] = [dict(e) for e in _char_edges(dfa)] + [{0: ir.EMPTY}, {}]
    for s in range(n):
        if dfa.accepting[s]:
            out[s][final] = ir.alt(out[s].get(final, ir.NOTHING), ir.EMPTY)
    inc: list[set[int]] = [set() for _ in range(n + 2)]
    for s, targets in enumerate(out):
        for t in targets:
            inc[t].add(s)
    remaining = set(range(n))
    while remaining:
        k = min(remaining, key=lambda q: (len(inc[q] - {q}) * len(set(out[q]) - {q}), q))
        remaining.discard(k)
        loop = out[k].pop(k, None)
        inc[k].discard(k)
        star = ir.EMPTY if loop is None else ir.repeat(loop)
        for p in inc[k]:
            into = out[p].pop(k)
            for q, away in out[k].items():
                path = ir.seq(into, star, away)
                out[p][q] = ir.alt(out[p][q], path) if q in out[p] else path
                inc[q].add(p)
                if _size(out[p][q]) > MAX_EXPR_NODES:
                    raise DfaOpError("the language has no compact expression (state elimination blew up)")
        for q in out[k]:
            inc[q].discard(k)
        out[k] = {}
        inc[k] = set()
    return out[start].get(final, ir.NOTHING)


EXPR_STATES = 64  # to_ir tries state elimination up to this many states (bigger ones took seconds:
# 1.3 s for a 258-state email pattern; 3-4 s before giving up on format email with a pattern)


def to_ir(dfa: Dfa | None) -> ir.Expr:
    """The DFA's language in the IR: an expression when state elimination gives a compact one
    (what every IR pass reads best), else the DFA itself as a leaf (ir.ByteDfa)."""
    if dfa is not None and dfa.num_states <= EXPR_STATES:
        try:
            return to_expr(dfa)
        except DfaOpError:
            pass
    return as_leaf(dfa)


def _size(e: ir.Expr) -> int:
    total = 0
    for _ in ir.walk(e):
        total += 1
        if total > MAX_EXPR_NODES:
            break
    return total
