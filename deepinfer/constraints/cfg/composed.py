"""Lexeme DFAs composed from a small head and a shared rest, instead of determinized whole.

Any plain lexeme Seq(items) qualifies: it is split after its last literal that leaves
a rest of MIN_REST_NFA+ NFA states behind a head of at most MAX_HEAD_NFA states; the
head's DFA (a literal's chain, or heads.py's shared DFA) and the rest's DFA (cached
here, process-wide, bounded) are concatenated: a few array copies. Exact when the
concatenation is deterministic, which `compose` checks: no accepting head state reads
a first byte of the rest (then the rest starts exactly where the head ends). The
composed table need not be minimal; nothing relies on that for correctness (scan.py's
digests only share less). Two rest shapes are laid out directly rather than
determinized, recognized from the IR alone: the complement of a set of names
(not_in_dfa.py, the shape regular/not_in.py builds) and a counted repetition before a
literal (counted.py).

Generic over grammars; JSON Schema objects are where it pays most. An object with
optional properties offers, after each value, the lexeme `,` ws `"` K `":` ws, where K
is its "any other key" trie, and at its first key the same lexeme without `,` ws: each
used to be determinized on its own, the same K (hundreds to thousands of DFA states)
twice per object, 15-300 ms each, mostly inside a mask step (TBM) or the compile
(TTFM); here both share one rest. Knows nothing about tokens, parsing or schemas.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict

import numpy as np

from .. import ir
from ..regular.dfa import Limits, determinize_expr
from ..errors import ConstraintError
from ..regular.gcpause import gc_paused
from ..regular.facts import FactsCache
from .heads import MAX_HEAD_NFA, plain, shared_head
from .counted import counted_dfa
from .not_in_dfa import not_in_rest_dfa

MIN_REST_NFA = 16         # smaller rests are cheap to build whole: no split
MAX_KEPT_STATES = 60_000  # DFA states of the rests kept (1 KB each)
_lock = threading.Lock()
_rests: OrderedDict = OrderedDict()  # (rest expr, limits) -> (trans, accepting, digest) | None (LRU)
_kept = [0]
# A rest's name in composed digests: unique in the process, never reused (a rest built again
# after eviction gets a new one: less sharing, never a wrong one). Why not a hash of the table:
# a bounded string's rest is a ~700 KB table, ~1.5 ms to hash (measured), on its first use inside a mask step.
_rest_names = itertools.count()
REST_MARK = "@"  # composed digests: "parts:<hash>@<rest name>@<rest states>" (rest_run_key)


def split_parts(expr) -> tuple[ir.Expr, ir.Expr] | None:
    """(head, rest) with expr == Seq(head items + rest items): the head ends with a
    literal, is plain and at most MAX_HEAD_NFA NFA states; the rest is plain, starts
    with a non-literal and is at least MIN_REST_NFA states. The split is the last such
    point, so `,` ws `"` K ... and `"` K ... share the same rest K ...; None if none."""
    if not isinstance(expr, ir.Seq) or len(expr.items) < 2:
        return None
    if not plain(expr):  # a regular rule reference: built with the grammar's rules instead
        return None
    items, facts = expr.items, FactsCache({})
    sizes = [facts.of(item).states for item in items]
    best, size, left = None, 0, sum(sizes)
    for k in range(1, len(items)):
        size, left = size + sizes[k - 1], left - sizes[k - 1]
        if size > MAX_HEAD_NFA or left < MIN_REST_NFA:
            break
        if isinstance(items[k - 1], ir.Literal) and not isinstance(items[k], ir.Literal):
            best = k
    if best is None:
        return None
    return ir.Seq(tuple(items[:best])), ir.Seq(tuple(items[best:]))


def composed_dfa(expr, limits: Limits) -> tuple[np.ndarray, np.ndarray, str, int] | None:
    """(trans int32 [S, 256] read-only, accepting bool [S], digest, start state) of expr's
    DFA from its shared parts, or None when it does not split deterministically (the
    caller then determinizes expr itself)."""
    split = split_parts(expr)
    if split is None:
        return None
    if all(isinstance(item, ir.Literal) for item in split[0].items):  # a key: `"name":`
        text = "".join(item.text for item in split[0].items).encode("utf-8")
        h_trans, h_accepting = _literal_dfa(text)
        h_name = b"literal:" + text
    else:
        head = shared_head(split[0])
        if head is None or head.accepting[0]:
            return None
        h_trans, h_accepting, h_name = head.trans, head.accepting, b"head:" + head.digest.encode()
    rest = _rest_dfa(split[1], limits)
    if rest is None:
        return None
    r_trans, r_accepting, r_digest = rest
    got = compose(h_trans, h_accepting, r_trans, r_accepting, h_name + b"|" + r_digest)
    if got is None:
        return None
    trans, accepting, digest, start = got
    return trans, accepting, f"{digest}{REST_MARK}{r_digest.decode()}{REST_MARK}{len(r_trans)}", start


def rest_run_key(digest: str, state: int) -> tuple | None:
    """("rest", rest name, state) when `state` of the lexeme DFA named `digest` lies in a
    composed lexeme's rest, else None. Why: compose lays the rest out first with its states'
    numbers and rows unchanged, and nothing leads from them back into the head, so what is
    read from such a state is the rest's alone: every property key composed with one rest
    (forty `maxLength: 256` strings) shares its runs (scan.py) instead of walking the
    vocabulary again per key (a bounded string's count state: ~1-2 ms per walk, measured)."""
    if not digest.startswith("parts:"):
        return None
    _, name, size = digest.split(REST_MARK)
    return ("rest", name, state) if state < int(size.rstrip("+")) else None


def _literal_dfa(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """int32 [n + 1, 256], bool [n + 1]: the chain DFA of one non-empty literal (no
    subset construction: every property key has its own)."""
    n = len(text)
    trans = np.full((n + 1, 256), -1, dtype=np.int32)
    trans[np.arange(n), np.frombuffer(text, dtype=np.uint8)] = np.arange(1, n + 1, dtype=np.int32)
    accepting = np.zeros(n + 1, dtype=bool)
    accepting[n] = True
    return trans, accepting


def compose(h_trans, h_accepting, r_trans, r_accepting, name: bytes | None = None):
    """Concatenation H . R of two DFAs (start 0 each) when deterministic, else None:
    (trans, accepting, digest, start). Laid out rest first: R's states keep their
    numbers (one copy of R's table, no renumbering pass: 52 instead of 390 us for a
    700-state rest and a 12-state head, best of 3), H's follow, and the start is H's start (len(R)). The
    digest hashes `name` (what determines both tables: the head's literal or digest and
    the rest's digest) when given, else the composed table. Why: a rest of ~700 states is
    a 700 KB table, ~1.2 ms to hash, and every property key composes its own copy,
    inside mask steps."""
    starts = r_trans[0] >= 0                                        # bool [256] R's first bytes
    ends = np.flatnonzero(h_accepting)
    if (h_trans[ends][:, starts] >= 0).any():
        return None  # an accepting head state could also go on in the head
    sr = len(r_trans)
    trans = np.empty((sr + len(h_trans), 256), dtype=np.int32)
    trans[:sr] = r_trans
    trans[sr:] = np.where(h_trans >= 0, h_trans + sr, -1)
    trans[np.ix_(ends + sr, np.flatnonzero(starts))] = r_trans[0, starts]
    accepting = np.concatenate([r_accepting, h_accepting & bool(r_accepting[0])])
    trans.flags.writeable = False
    named = name if name is not None else b"table:" + trans.tobytes() + accepting.tobytes()
    digest = "parts:" + hashlib.blake2b(named, digest_size=16).hexdigest()
    return trans, accepting, digest, sr


def _rest_dfa(rest, limits: Limits):
    key = (rest, limits.max_nfa_states, limits.max_dfa_states)
    with _lock:
        if key in _rests:
            _rests.move_to_end(key)
            got = _rests[key]
            if isinstance(got, ConstraintError):
                raise ConstraintError(str(got), got.reason)
            return got
    got = not_in_rest_dfa(rest, limits)  # "any other key" K ...: from the names (not_in_dfa.py)
    if got is None:
        got = counted_dfa(rest, limits)  # a bounded string's body X{lo,hi} `"`: laid out (counted.py)
    if got is None:
        try:
            with gc_paused():
                dfa = determinize_expr(rest, limits)
            got = (np.ascontiguousarray(dfa.trans, dtype=np.int32), dfa.accepting)
        except ConstraintError as exc:
            # Too large or too slow: the whole lexeme reads its head, then this rest, so its own
            # subset construction would meet the same limit, after as long again (two 6 s
            # determinizations to 20,000 states for one MaskBench schema). Fail now, and
            # remember it: every key composed with this rest fails the same way.
            with _lock:
                _rests[key] = exc
            raise ConstraintError(str(exc), exc.reason) from None
    if got is not None:  # named once per rest, not per key composed with it
        got = (*got, b"rest#%d" % next(_rest_names))
    with _lock:
        if key not in _rests:
            _rests[key] = got
            _kept[0] += 0 if got is None else len(got[0])
            while _kept[0] > MAX_KEPT_STATES and len(_rests) > 1:
                _, old = _rests.popitem(last=False)
                _kept[0] -= 0 if old is None or isinstance(old, ConstraintError) else len(old[0])
    return got


def clear() -> None:
    with _lock:
        _rests.clear()
        _kept[0] = 0
