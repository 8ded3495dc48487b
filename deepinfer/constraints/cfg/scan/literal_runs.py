"""Root runs of states that start with a forced literal, by binary search.

From a state q where each next state has exactly
one live byte for m >= 2 bytes (a property key lexeme `"name":` after its
quote, a `true`, the rest of a keyword), a token is read only if it is a
prefix of that literal L, or has L as a prefix and goes on from the state r
after L. Tokens are sorted by their bytes (vocab.py), so the prefixes of L are
at most len(L) exact lookups and the tokens extending L are one contiguous
range: no pass over the vocabulary. Why: an object's opening offers one such
lexeme per property, and each used to cost a vectorized pass (~1 ms) on its
first visit.

Exact: the DFA is deterministic and states between bytes 1 and m-1 are not
accepting (the walk stops at an accepting one), so no token crosses a lexeme
boundary inside L; at r (accepting or not) the ordinary walk takes over.
Knows nothing about parsing.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from ... import ir
from . import native_keys

MIN_LITERAL = 2


def literal_prefix(scans, trans: np.ndarray, accepting: np.ndarray, state: int, limit: int):
    """(literal bytes, state after them) forced from `state` (at most `limit` bytes,
    no accepting state strictly inside), or None if shorter than MIN_LITERAL."""
    if native_keys.available():
        out, q = native_keys.forced_literal(trans, accepting, state, limit)
        return (out, q) if len(out) >= MIN_LITERAL else None
    only = _single_bytes(scans, trans)
    out = bytearray()
    q = state
    while len(out) < limit and not (out and accepting[q]):
        step = only.get(q)
        if step is None:
            step = only[q] = _only_byte(trans, q)
        if step is None:
            break
        out.append(step[0])
        q = step[1]
    return (bytes(out), q) if len(out) >= MIN_LITERAL else None


def _single_bytes(scans, trans: np.ndarray) -> dict:
    """Per DFA: state -> (its only live byte, the state it leads to), or None when it
    has none or several; filled per state as asked (the fallback where the C walk,
    native_keys.forced_literal, does not build). Why lazily: most states asked about
    have many live bytes, and the pass over a new lexeme's whole table this replaced
    took ~70 us per call (under cProfile) in the slow steps of MaskBench."""
    key = (trans.ctypes.data, trans.shape[0])
    hit = scans.single_bytes.get(key)
    if hit is None:
        hit = scans.single_bytes[key] = ({}, trans)  # keep trans alive (the key is its address)
    return hit[0]


def _only_byte(trans: np.ndarray, state: int) -> tuple[int, int] | None:
    live = np.flatnonzero(trans[state] >= 0)
    return (int(live[0]), int(trans[state, live[0]])) if live.size == 1 else None


def literal_walk(scans, trans, accepting, follow, literal: bytes, end: int,
                 inside: list, hit_idx: list, hit_off: list) -> None:
    """Append the root-scope entries of a state whose next bytes are `literal`
    (then state `end`) to inside / hit_idx / hit_off, like an ordinary walk."""
    tokens = scans.sorted_tokens()
    m = len(literal)
    exact = []
    for i in range(1, m + 1):                        # tokens that are prefixes of the literal
        pos = bisect_left(tokens, literal[:i])
        if pos < len(tokens) and tokens[pos] == literal[:i]:
            exact.append(pos)
    if exact:
        inside.append(np.array(exact, dtype=np.int64))
    lo = bisect_left(tokens, literal)
    hi = _prefix_end(tokens, literal, lo)
    if lo < len(tokens) and tokens[lo] == literal:
        lo += 1                                      # the literal itself: counted above
    if hi <= lo:
        return
    longer = np.arange(lo, hi, dtype=np.int64)       # tokens that go on after the literal
    if accepting[end]:  # the lexeme may end right after the literal: a crossing at offset m
        nxt = longer[follow.take(scans.vocab.sorted_bytes_T[m].take(longer))]
        if nxt.size:
            hit_idx.append(nxt)
            hit_off.append(np.full(nxt.size, m, dtype=np.int64))
    scans._walk_uniform(trans.reshape(-1), accepting, follow, longer, m, end, inside, hit_idx, hit_off)


def _prefix_end(tokens: list, prefix: bytes, lo: int) -> int:
    """First position at or after `lo` whose token does not start with `prefix`."""
    head = prefix.rstrip(b"\xff")
    if not head:  # every byte 0xff: the prefix range runs to the end
        return len(tokens)
    bound = head[:-1] + bytes([head[-1] + 1])       # smallest string above every extension
    return bisect_left(tokens, bound, lo)


def expr_literal(expr) -> bytes:
    """The UTF-8 text every match of the IR expression starts with (its leading
    literals and one-character classes), b"" if shorter than MIN_LITERAL. Read
    from the expression, so a lexeme's DFA need not exist (automaton.py)."""
    out = bytearray()
    _leading(expr, out)
    return bytes(out) if len(out) >= MIN_LITERAL else b""


def _leading(expr, out: bytearray) -> bool:
    """Append expr's forced text; True if all of expr was literal (go on after it)."""
    if isinstance(expr, ir.Literal):
        out += expr.text.encode("utf-8")
        return True
    if isinstance(expr, ir.CharClass) and len(expr.ranges) == 1 and expr.ranges[0][0] == expr.ranges[0][1]:
        out += chr(expr.ranges[0][0]).encode("utf-8")
        return True
    if isinstance(expr, ir.Seq):
        return all(_leading(item, out) for item in expr.items)  # stops at the first non-literal
    return False


def literal_scope(scans, scope_id: int, literal: bytes) -> tuple[np.ndarray, bool]:
    """(token ids of the scope's entries whose remaining bytes are a prefix of
    `literal`, whether some entry reads all of it and goes on). Root scope by
    binary search (cached per literal), other scopes by comparing a few columns."""
    if scope_id == 0:
        hit = scans.literal_roots.get(literal)
        if hit is None:
            tokens = scans.sorted_tokens()
            pos = [bisect_left(tokens, literal[:i]) for i in range(1, len(literal) + 1)]
            pos = [p for i, p in enumerate(pos, 1) if p < len(tokens) and tokens[p] == literal[:i]]
            lo = bisect_left(tokens, literal)
            if lo < len(tokens) and tokens[lo] == literal:
                lo += 1
            extends = _prefix_end(tokens, literal, lo) > lo
            hit = scans.literal_roots[literal] = (
                scans.vocab.sorted_ids.take(np.array(pos, dtype=np.int64)), extends)
        return hit
    hit = scans.literal_scopes.get((scope_id, literal))
    if hit is None:
        hit = scans.literal_scopes[(scope_id, literal)] = _scope_prefixes(scans, scope_id, literal)
    return hit


def _scope_prefixes(scans, scope_id: int, literal: bytes) -> tuple[np.ndarray, bool]:
    """Through the scope's index of remaining bytes (built once per scope): an object's
    child scopes are asked for every property's literal (one per remaining property),
    so the per-literal cost is a few dict lookups and one binary search."""
    index = scans.literal_index.get(scope_id)
    if index is None:  # first literal: compare columns; the index pays from the second on
        scans.literal_index[scope_id] = False
        return _scope_prefixes_walk(scans, scope_id, literal)
    if index is False:
        index = scans.literal_index[scope_id] = _scope_index(scans, scope_id)
    by_rest, rests = index
    found = [ids for i in range(1, len(literal) + 1) if (ids := by_rest.get(literal[:i])) is not None]
    pos = bisect_left(rests, literal)
    if pos < len(rests) and rests[pos] == literal:
        pos += 1
    goes_on = pos < len(rests) and rests[pos].startswith(literal)
    ids = found[0] if len(found) == 1 else np.concatenate(found) if found else _NO_IDS
    return ids, goes_on


def _scope_index(scans, scope_id: int) -> tuple[dict, list]:
    """({remaining bytes: token ids int32}, the distinct remaining bytes sorted) of a scope."""
    scope = scans.scopes[scope_id]
    tokens = scans.sorted_tokens()
    ids = scans.vocab.sorted_ids.take(scope.positions).tolist()
    groups: dict[bytes, list[int]] = {}
    for token_id, p, off in zip(ids, scope.positions.tolist(), scope.offsets.tolist()):
        groups.setdefault(tokens[p][off:], []).append(token_id)
    by_rest = {rest: np.array(g, dtype=np.int32) for rest, g in groups.items()}
    return by_rest, sorted(by_rest)


_NO_IDS = np.zeros(0, dtype=np.int32)


def _scope_prefixes_walk(scans, scope_id: int, literal: bytes) -> tuple[np.ndarray, bool]:
    """The same by comparing columns (the definition; tests compare the two)."""
    scope = scans.scopes[scope_id]
    vocab = scans.vocab
    pos, off = scope.positions, scope.offsets
    rest = vocab.sorted_lengths.take(pos) - off                      # bytes left per entry
    match = np.ones(pos.size, dtype=bool)
    for j, byte in enumerate(literal):
        col = j < rest
        if not col.any():
            break
        at = np.flatnonzero(col)
        match[at] &= vocab.sorted_bytes[pos[at], off[at] + j] == byte
    inside = match & (rest <= len(literal))
    return vocab.sorted_ids.take(pos[inside]), bool((match & (rest > len(literal))).any())
