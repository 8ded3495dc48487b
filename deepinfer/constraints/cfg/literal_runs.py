"""Root runs of states that start with a forced literal, by binary search.

(Created by the TBM helper.) From a state q where each next state has exactly
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

MIN_LITERAL = 2


def literal_prefix(trans: np.ndarray, accepting: np.ndarray, state: int, limit: int):
    """(literal bytes, state after them) forced from `state` (at most `limit` bytes,
    no accepting state strictly inside), or None if shorter than MIN_LITERAL."""
    out = bytearray()
    q = state
    while len(out) < limit and not (out and accepting[q]):
        live = np.flatnonzero(trans[q] >= 0)
        if live.size != 1:
            break
        byte = int(live[0])
        out.append(byte)
        q = int(trans[q, byte])
    return (bytes(out), q) if len(out) >= MIN_LITERAL else None


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
