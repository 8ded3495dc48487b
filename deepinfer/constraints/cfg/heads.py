"""Lexemes of the shape "small head, then a literal, then anything": `,` ws `"name":` ws.

A JSON object offers one such lexeme per remaining
property after each value; building each one's DFA (lexeme.py) in the step that
first needs it was most of the slow steps. The head (`,` plus optional
whitespace) is the same expression in every one of them, so its small DFA is
built once per process here; a thread reads the head with it, then the literal
byte by byte (automaton.py), and the lexeme's own DFA is built only when a
token reads past the literal (the property actually taken).

When the taken property needs its own DFA, `install_composed` assembles it from
the head DFA, the literal and the tail's DFA (also shared: whitespace), which is
a few array copies instead of a subset construction and minimization.

Exact when the split is deterministic, which `head_for` checks: no accepting
head state reads the literal's first byte, so the literal starts exactly where
the head ends, and the residual after any head match plus the literal is the
same (the lexeme's DFA state reached through `via`, any head match).
Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .. import ir
from ..regular.facts import FactsCache
from ..regular.dfa import Limits, determinize_expr
from ..errors import ConstraintError
from .not_in_dfa import not_in_rest_dfa
from .scan.literal_runs import MIN_LITERAL

MAX_HEAD_NFA = 400          # heads are whitespace and punctuation; bigger ones are not shared
_HEADS: dict = {}  # head or ("tail", expr) expression -> Head | None (IR nodes hash in O(1))
_HEADS_MAX = 4_096  # entries (heads are small: whitespace, punctuation, short keys); then emptied


@dataclass(eq=False)
class Head:
    trans: np.ndarray                 # int32 [S, 256] the head's minimal DFA (start 0)
    accepting: np.ndarray             # bool [S]
    digest: str
    via: bytes                        # a shortest head match
    rows: dict = field(default_factory=dict)      # state -> tuple row (visited states only)
    accept_list: tuple = ()                        # tuples of ints leave the cyclic GC
    paths: dict = field(default_factory=dict)  # head state -> bytes reaching it

    def row(self, q: int) -> tuple:
        got = self.rows.get(q)
        if got is None:
            got = self.rows[q] = tuple(self.trans[q].tolist())
        return got

    def path_to(self, q: int) -> bytes:
        """Bytes leading from the start to head state q (breadth first, cached)."""
        if not self.paths:
            self.paths[0] = b""
            order = [0]
            for s in order:
                row = self.trans[s]
                live = np.flatnonzero(row >= 0)  # ascending bytes, as before: same paths
                for byte, t in zip(live.tolist(), row[live].tolist()):
                    if t not in self.paths:
                        self.paths[t] = self.paths[s] + bytes([byte])
                        order.append(t)
        return self.paths[q]


def split_head(expr) -> tuple[ir.Expr, bytes] | None:
    """(head expression, literal) when expr is Seq(head items..., literal items..., rest...)
    with a non-empty head of plain regular items and a literal of MIN_LITERAL+ bytes."""
    if not isinstance(expr, ir.Seq):
        return None
    items = expr.items
    for k, item in enumerate(items):
        if isinstance(item, ir.Literal) and len(item.text.encode("utf-8")) >= MIN_LITERAL:
            if k == 0:
                return None  # a plain literal-led lexeme (automaton reads it without a head)
            literal = bytearray()
            for nxt in items[k:]:
                if not isinstance(nxt, ir.Literal):
                    break
                literal += nxt.text.encode("utf-8")
            head = ir.Seq(tuple(items[:k]))
            return (head, bytes(literal)) if plain(head) else None
    return None


def head_for(expr) -> tuple[Head, bytes] | None:
    """The shared head DFA and the literal of a lexeme expression, or None."""
    split = split_head(expr)
    if split is None:
        return None
    head_expr, literal = split
    head = shared_head(head_expr)
    if head is None or (head.trans[head.accepting, literal[0]] >= 0).any():
        return None  # not deterministic where the head ends: use the lexeme's DFA
    return head, literal


def shared_head(expr) -> Head | None:
    """The process-wide DFA of a small plain expression (None if too big or empty).

    Bounded: a long-running server compiles ever new schemas, and keys such as a
    schema's property names end up in heads; emptied when full (refilled on demand)."""
    head = _HEADS.get(expr, _MISSING)
    if head is _MISSING:
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        head = _HEADS[expr] = _build(expr[1] if isinstance(expr, tuple) else expr)
    return head


_MISSING = object()
def plain(expr) -> bool:
    """No reference to a regular rule (those need the grammar's rules to build).
    O(1): IR nodes keep the rule names referenced inside them (ir.rule_refs)."""
    return not ir.rule_refs(expr)


def _build(expr) -> Head | None:
    if FactsCache({}).of(expr).states > MAX_HEAD_NFA:
        # Too big to share (any-other-key tries after `, ws "`): known from the tree, without
        # building ~400 NFA states first only to hit the limit (~0.8 ms a compile on MaskBench).
        # The estimate never undercounts nfa.py, so no head that fits is lost to it (None is
        # always sound: the lexeme then uses its own DFA).
        return None
    composed = _composed(expr)
    if composed is not None:
        return composed
    direct = _not_in_head(expr)
    if direct is not None:
        return direct
    try:
        dfa = determinize_expr(expr, Limits(max_nfa_states=MAX_HEAD_NFA, max_dfa_states=MAX_HEAD_NFA))
    except ConstraintError:
        return None
    trans = np.ascontiguousarray(dfa.trans, dtype=np.int32)
    trans.flags.writeable = False
    return _finish(trans, dfa.accepting, "head:" + dfa.digest)


def _not_in_head(expr) -> Head | None:
    """A key trie "any name but these" (regular/not_in.py) alone: its table assembled from the
    names (not_in_dfa.py), not determinized. Why: `,` ws `"` trie heads are built when their
    lexeme's first thread starts (automaton.py), and the trie's subset construction plus
    minimization was a ~2 ms mask step. Exact (not_in_dfa's construction; the table need
    not be minimal, as in _composed); None when that construction does not apply."""
    if not isinstance(expr, ir.Seq) or len(expr.items) != 1:
        return None
    try:
        got = not_in_rest_dfa(expr, Limits(max_nfa_states=MAX_HEAD_NFA, max_dfa_states=MAX_HEAD_NFA))
    except ConstraintError:
        return None
    if got is None:
        return None
    trans = np.ascontiguousarray(got[0], dtype=np.int32)
    accepting = np.asarray(got[1], dtype=bool)
    if len(trans) > MAX_HEAD_NFA:
        return None
    trans.flags.writeable = False
    digest = hashlib.blake2b(trans.tobytes() + accepting.tobytes(), digest_size=16).hexdigest()
    return _finish(trans, accepting, "head:not_in:" + digest)


def _composed(expr) -> Head | None:
    """A head such as `,` ws `"` key-trie as the composition of two shared heads
    (`,` ws and the key trie) around its literal (the items before the first
    non-leading literal, the literal run, the rest), or None when it has no such split or the split
    is not deterministic (then it is determinized as a whole). Why: every new property
    key set made a new head, each a ~2.5 ms subset construction plus minimization (one
    Moore round per bounded-whitespace position) on compiles just above the MaskBench
    median; the whitespace part is now built once per process.
    Exact by the argument of `compose`; the table need not be minimal (heads are only
    read state by state; digests are cache keys)."""
    if not isinstance(expr, ir.Seq):
        return None
    items = expr.items
    k = next((k for k in range(1, len(items)) if isinstance(items[k], ir.Literal)), len(items))
    literal = bytearray()
    j = k
    while j < len(items) and isinstance(items[j], ir.Literal):
        literal += items[j].text.encode("utf-8")
        j += 1
    if not literal or j == len(items):
        return None
    first = shared_head(ir.Seq(tuple(items[:k])))
    tail = shared_head(("tail", ir.Seq(tuple(items[j:]))))
    if first is None or tail is None or (first.trans[first.accepting, literal[0]] >= 0).any():
        return None
    if len(first.trans) + len(literal) + len(tail.trans) > MAX_HEAD_NFA + 1:
        return None  # the whole is determinized under the same DFA-state limit as before
    trans, accepting = compose(first, bytes(literal), tail)
    return _finish(trans, accepting, "head:composed:" + _parts_digest(first, bytes(literal), tail))


def _finish(trans: np.ndarray, accepting_arr: np.ndarray, digest: str) -> Head | None:
    head = Head(trans, accepting_arr, digest, b"", {}, tuple(accepting_arr.tolist()))
    accepting = [q for q in range(len(trans)) if head.accept_list[q]]
    if not accepting:
        return None
    head.via = min((head.path_to(q) for q in accepting), key=len)
    return head


def install_composed(lexeme, literal: bytes, head: Head) -> bool:
    """Give an unbuilt lexeme head . literal . tail the DFA composed from its parts
    (the same attributes Lexeme.build sets); False if the tail is not simple."""
    split = split_head(lexeme.expr)
    if split is None or lexeme.nullable:
        return False
    items = lexeme.expr.items
    k = len(split[0].items)
    j = k
    while j < len(items) and isinstance(items[j], ir.Literal):
        j += 1
    tail_expr = ir.Seq(tuple(items[j:]))
    if not plain(tail_expr):
        return False
    tail = shared_head(("tail", tail_expr))
    if tail is None:
        return False
    trans, accepting = compose(head, literal, tail)
    digest = "composed:" + _parts_digest(head, literal, tail)
    with lexeme._lock:
        if "trans" not in lexeme.__dict__:
            lexeme.__dict__.update(accepting=accepting, start=0, digest=digest,
                                   rows={}, accept_list=tuple(accepting.tolist()))
            lexeme.__dict__["trans"] = trans  # last: its presence means "built" (lexeme.py)
    return True


def _parts_digest(head: Head, literal: bytes, tail: Head) -> str:
    """A digest of compose(head, literal, tail) from what determines it. Why not the
    table's bytes: a key-trie head is up to ~1 MB, ~1.5 ms to hash, once per property
    lexeme started inside a mask step."""
    named = b"|".join((head.digest.encode(), literal.hex().encode(), tail.digest.encode()))
    return hashlib.blake2b(named, digest_size=16).hexdigest()


def compose(head: Head, literal: bytes, tail: Head) -> tuple[np.ndarray, np.ndarray]:
    """int32 [S, 256], bool [S]: head states, then literal[1:] chain states, then the
    tail's states (the last literal byte leads to the tail's start). Accepting:
    the tail's only. Deterministic: no accepting head state reads literal[0]."""
    sh, m, st = len(head.trans), len(literal), len(tail.trans)
    chain0, tail0 = sh, sh + m - 1
    trans = np.full((sh + m - 1 + st, 256), -1, dtype=np.int32)
    trans[:sh] = head.trans
    trans[np.flatnonzero(head.accepting), literal[0]] = chain0 if m > 1 else tail0
    for i in range(1, m):
        trans[chain0 + i - 1, literal[i]] = chain0 + i if i < m - 1 else tail0
    trans[tail0:] = np.where(tail.trans >= 0, tail.trans + tail0, -1)
    accepting = np.zeros(len(trans), dtype=bool)
    accepting[tail0:] = tail.accepting
    trans.flags.writeable = False
    return trans, accepting
