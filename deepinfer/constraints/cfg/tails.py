"""Root-scope runs assembled from shared "tails" (the walk after the first byte).

A root run of DFA state q reads every token from its first byte. When many
first bytes lead to the same state q' (a string body: ~95 characters go to
the same "any character" state from every node of a key trie, from a
`not`-enum, from each position of a pattern), the walk from byte 1 on is the
same for all those q: the *tail* of q', the run over every token of two or
more bytes started at offset 1 in q', computed once per (language read from q',
follow set) and cached. A root run is then the tails of its big byte groups, filtered by
first byte (one vectorized gather), plus an ordinary walk of the small groups.
Exactly the entries an ordinary walk from q yields: a token is inside, or
crosses a boundary at offset j, iff it does so reading bytes 1.. from q'.
Knows nothing about parsing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPLIT_MIN = 4_000      # tokens in a byte group worth a cached tail if one exists
SPLIT_BUILD = 20_000   # ... and worth computing one (about the cost of walking them)


@dataclass
class Tail:
    inside: np.ndarray    # int64 positions (vocab.sorted_*) of tokens read entirely from q'
    hit_pos: np.ndarray   # int64 positions crossing a boundary ...
    hit_off: np.ndarray   # ... at these byte offsets (>= 1)


def root_walk(scans, key, trans, accepting, state, follow, idx, inside, hit_idx, hit_off) -> None:
    """Append the root-scope entries of `idx` (every token whose first byte is
    allowed from `state`) to inside / hit_idx / hit_off."""
    vocab = scans.vocab
    flat = trans.reshape(-1)
    row = trans[state]
    ok = np.flatnonzero(row >= 0)                                   # allowed first bytes
    # group sizes among the candidates (idx is ascending; tokens sort by first byte):
    # a whole first-byte range can be big while its live second bytes are few,
    # e.g. " " after a comma where only '  ' and ' "' go on (no tail is worth it)
    counts = (np.searchsorted(idx, vocab.first_byte_start[ok + 1])
              - np.searchsorted(idx, vocab.first_byte_start[ok]))
    targets = row.take(ok)
    big: list[tuple[int, np.ndarray]] = []
    for q2 in np.unique(targets).tolist():
        sel = targets == q2
        size = int(counts[sel].sum())
        if size >= SPLIT_BUILD or (size >= SPLIT_MIN and
                                   _tail_key(scans, key, trans, accepting, q2) in scans.tails):
            big.append((q2, ok[sel]))
    if not big:
        scans._walk_uniform(flat, accepting, follow, idx, 0, state, inside, hit_idx, hit_off)
        return
    col0 = vocab.sorted_bytes_T[0]
    small = np.ones(256, dtype=bool)
    for _, group in big:
        small[group] = False
    rest = idx[small.take(col0.take(idx))]
    if rest.size:
        scans._walk_uniform(flat, accepting, follow, rest, 0, state, inside, hit_idx, hit_off)
    for q2, group in big:
        lut = np.zeros(256, dtype=bool)
        lut[group] = True
        ones = vocab.first_byte_start[group]                          # one-byte tokens sort first
        ones = ones[(ones < len(vocab.sorted_lengths)) & (vocab.sorted_lengths.take(
            np.minimum(ones, len(vocab.sorted_lengths) - 1)) == 1)]
        ones = ones[lut.take(col0.take(ones))]
        if ones.size:
            inside.append(ones)                                       # the byte moved to q2: alive
        tail = _tail(scans, key, trans, accepting, q2, follow)
        inside.append(tail.inside[lut.take(col0.take(tail.inside))])
        keep = lut.take(col0.take(tail.hit_pos))
        if keep.any():
            hit_idx.append(tail.hit_pos[keep])
            hit_off.append(tail.hit_off[keep])


def _tail_key(scans, key, trans, accepting, q2: int) -> tuple:
    """Tails are keyed by the language read from q2 (its canonical sub-DFA) and the
    follow set, so equal states of different lexemes share one: the "any string
    character" state behind every object's key trie, say."""
    return (scans.state_digest(trans, accepting, q2), key[1])


def _tail(scans, key, trans, accepting, q2: int, follow) -> Tail:
    key = _tail_key(scans, key, trans, accepting, q2)
    got = scans.tails.get(key)
    if got is None:
        vocab = scans.vocab
        multi = scans.multi_byte_positions()                          # tokens of >= 2 bytes
        inside: list[np.ndarray] = []
        hit_idx: list[np.ndarray] = []
        hit_off: list[np.ndarray] = []
        if accepting[q2]:  # the lexeme may end after byte 0: a crossing at offset 1
            cand = multi[follow.take(vocab.sorted_bytes_T[1].take(multi))]
            if cand.size:
                hit_idx.append(cand)
                hit_off.append(np.ones(cand.size, dtype=np.int64))
        scans._walk_uniform(trans.reshape(-1), accepting, follow, multi, 1, q2, inside, hit_idx, hit_off)
        got = scans.tails[key] = Tail(
            np.concatenate(inside) if inside else np.zeros(0, np.int64),
            np.concatenate(hit_idx) if hit_idx else np.zeros(0, np.int64),
            np.concatenate(hit_off) if hit_off else np.zeros(0, np.int64))
    return got
