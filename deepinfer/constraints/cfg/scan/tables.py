"""Per-vocabulary and per-DFA tables for scan.py: state digests and suffix signatures.

(Split out of scan.py.) `sub_dfa_digest` names the language read from a DFA
state (for sharing runs and tails between lexemes); `ascii_signatures` lets a
walk finish tokens whose remaining bytes all loop on their state. Knows
nothing about parsing.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...vocab import Vocabulary


def sub_dfa_digest(trans: np.ndarray, accepting: np.ndarray, state: int) -> str:
    # each row's targets in byte order, one per run of equal targets (rows are runs of
    # character classes: ~10 entries instead of 256 per state; first occurrences are the same)
    change = np.ones(trans.shape, dtype=bool)
    np.not_equal(trans[:, 1:], trans[:, :-1], out=change[:, 1:])
    rows, cols = np.nonzero(change)
    values = trans[rows, cols].tolist()
    bounds = np.searchsorted(rows, np.arange(trans.shape[0] + 1)).tolist()
    order, seen, i = [state], {state}, 0
    while i < len(order):
        q = order[i]
        for t in dict.fromkeys(values[bounds[q]:bounds[q + 1]]):  # targets in byte order
            if t >= 0 and t not in seen:
                seen.add(t)
                order.append(t)
        i += 1
    renum = np.full(trans.shape[0] + 1, -1, dtype=np.int32)       # index -1 -> -1
    renum[np.array(order)] = np.arange(len(order), dtype=np.int32)
    sub = renum[trans[order]]
    data = sub.tobytes() + accepting[order].tobytes()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def compact_rows(trans: np.ndarray, accepting: np.ndarray):
    """A DFA table as runs of equal targets (rows are runs of character classes: ~10
    entries instead of 256 per state), as tuples of ints (cached for good: tuples of
    ints leave the cyclic GC, lists would be rescanned by every collection): (row
    bounds [S + 1], targets, first byte of each run, accepting [S]); run i of row q is
    entries bounds[q] <= i < bounds[q + 1]."""
    s = trans.shape[0]
    flat = trans.reshape(-1)                                  # [S * 256]
    change = np.empty(flat.shape, dtype=bool)                 # a run starts here
    np.not_equal(flat[1:], flat[:-1], out=change[1:])
    change[::256] = True                                      # every row starts a run
    starts = np.flatnonzero(change)                           # 1-D: 2x faster than 2-D nonzero
    bounds = np.searchsorted(starts, np.arange(0, (s + 1) * 256, 256))
    return (tuple(bounds.tolist()), tuple(flat.take(starts).tolist()), tuple((starts & 255).tolist()),
            tuple(accepting.tolist()))


def small_sub_dfa_key(tables, accepting, state: int, limit: int) -> tuple | None:
    """The sub-DFA reachable from `state` (renumbered breadth first, targets in byte
    order) as a tuple, when it has at most `limit` states, else None. `tables`:
    compact_rows(trans, accepting). Equal tuples exactly for equal sub-DFAs: per state
    in that order, its acceptance, its number of runs, their first bytes and their
    renumbered targets (the tuple is a dict key: compared in full, no hash trust)."""
    bounds, values, cols, accept = tables
    order, index = [state], {state: 0, -1: -1}  # -1 (no transition) renumbers to itself
    out: list = []
    for q in order:  # grows while walking
        lo, hi = bounds[q], bounds[q + 1]
        row = values[lo:hi]
        for t in row:  # first occurrences in byte order
            if t not in index:
                if len(order) >= limit:
                    return None
                index[t] = len(order)
                order.append(t)
        out.append(accept[q])
        out.append(hi - lo)
        out.extend(cols[lo:hi])
        out.extend(map(index.__getitem__, row))
    return tuple(out)


SIG_LEVELS = 3  # suffix signatures for offsets 0, 1, 2


def ascii_signatures(vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """Per level j and sorted token: uint64 [SIG_LEVELS, n, 2] bit set of the ASCII
    bytes of bytes[j:], and bool [SIG_LEVELS, n] whether bytes[j:] has a byte >= 0x80."""
    mat, lengths = vocab.sorted_bytes, vocab.sorted_lengths
    n = len(lengths)
    sig = np.zeros((n, 2), dtype=np.uint64)
    high = np.zeros(n, dtype=bool)
    out_sig = np.zeros((SIG_LEVELS, n, 2), dtype=np.uint64)
    out_high = np.zeros((SIG_LEVELS, n), dtype=bool)
    for j in range(mat.shape[1] - 1, -1, -1):   # suffix bytes[j:] from the back
        live = np.flatnonzero(lengths > j)
        col = mat[live, j].astype(np.uint64)
        high[live] |= col >= 128
        low = col < 64
        sig[live[low], 0] |= np.uint64(1) << col[low]
        mid = (col >= 64) & (col < 128)
        sig[live[mid], 1] |= np.uint64(1) << (col[mid] - np.uint64(64))
        if j < SIG_LEVELS:
            out_sig[j], out_high[j] = sig, high
    return out_sig, out_high
