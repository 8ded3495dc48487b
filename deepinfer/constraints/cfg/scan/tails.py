"""Root-scope runs assembled from shared "tails" (the walk after the first bytes).

A root run of DFA state q reads every token from its first byte. When many
first bytes lead to the same state q' (a string body: ~95 characters go to
the same "any character" state from every node of a key trie, from a
`not`-enum, from each position of a pattern), the walk from byte 1 on is the
same for all those q: the *tail* of (q', 1), the run over every token of two or
more bytes started at offset 1 in q', computed once and cached. The same holds
one byte later: in a key trie node, the tokens that start with a key's next
letter mostly leave the trie at their second byte for the same "any other key"
state, so first-byte groups too small for a tail are grouped again by their
first two bytes (tails of (q'', 2)). A root run is then the tails of its big
groups, filtered by first byte or two-byte prefix (one vectorized gather),
plus an ordinary walk of what is left.

Tails are keyed by the language read from q' (its canonical sub-DFA) and the
offset, not by the follow set: they keep every boundary crossing with the byte
after it, and a use filters those by its follow set. So one tail serves every
grammar whose lexeme reaches an equal state (the "any other key" state behind
every object's key trie, say).

Exactly the entries an ordinary walk from q yields: a token is inside, or
crosses a boundary at offset j, iff it does so reading its bytes from q' on.
Knows nothing about parsing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...regular.masks import _ranges

SPLIT_MIN = 4_000      # tokens in a group worth a cached tail if one exists
SPLIT_BUILD = 20_000   # ... and worth computing one (about the cost of walking them)
WIDE_LOOP = 64         # ASCII bytes looping on a state that make its tails worth building
FOLLOWS_KEPT = 8       # filtered crossings kept per tail (Tail.hits_for)
FEW_RANGES = 32        # _use slices this many position ranges; more: one gather
_ANY = np.ones(256, dtype=bool)  # tails are built for every follow byte


@dataclass
class Tail:
    inside: np.ndarray    # int64 positions (vocab.sorted_*) of tokens read entirely from q', sorted
    hit_pos: np.ndarray   # int64 positions crossing a boundary (sorted) ...
    hit_off: np.ndarray   # ... at these byte offsets (>= the tail's offset) ...
    hit_byte: np.ndarray  # ... uint8 the byte after the boundary (for the follow filter)
    # follow set (bytes) -> (hit_pos, hit_off) of the crossings it keeps, still sorted:
    # a string tail has ~470K crossings and the few follow sets come back at every use
    by_follow: dict = field(default_factory=dict)

    def hits_for(self, follow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = follow.tobytes()
        got = self.by_follow.get(key)
        if got is None:
            keep = follow.take(self.hit_byte)
            got = (self.hit_pos[keep], self.hit_off[keep])
            if len(self.by_follow) < FOLLOWS_KEPT:  # bounded: ~7 MB each for a string tail
                self.by_follow[key] = got
        return got


def root_walk(scans, key, trans, accepting, state, follow, keys, inside, hit_idx, hit_off) -> None:
    """Append the root-scope entries of the tokens with prefix keys `keys` (the
    candidates from `state`, ascending; scan._live_keys) to inside / hit_idx / hit_off.
    Keys, not positions: only the tokens left to walk are ever listed (a trie node
    has ~110K candidates, most served by a tail)."""
    vocab = scans.vocab
    row = trans[state]
    ok = np.flatnonzero(row >= 0)                                   # allowed first bytes
    # group sizes among the candidates: a whole first-byte range can be big while its
    # live second bytes are few, e.g. " " after a comma where only '  ' and ' "' go on
    # (no tail is worth it)
    firsts = keys // 257
    counts = np.bincount(firsts, weights=vocab.pair_counts.take(keys), minlength=256).take(ok)
    if counts.sum() < SPLIT_MIN:  # no group big enough for a tail (a key-trie node's letters)
        scans._walk_uniform(trans.reshape(-1), accepting, follow, _ranges(keys, vocab), 0, state, inside,
                            hit_idx, hit_off)
        return
    targets = row.take(ok)
    col0 = vocab.sorted_bytes_T[0]
    small = np.ones(256, dtype=bool)
    for q2 in np.unique(targets).tolist():
        sel = targets == q2
        if _worth(scans, trans, accepting, q2, 1, int(counts[sel].sum())):
            group = ok[sel]
            small[group] = False
            lut = np.zeros(256, dtype=bool)
            lut[group] = True
            ones = vocab.first_byte_start[group]                    # one-byte tokens sort first
            ones = ones[(ones < len(vocab.sorted_lengths)) & (vocab.sorted_lengths.take(
                np.minimum(ones, len(vocab.sorted_lengths) - 1)) == 1)]
            ones = ones[lut.take(col0.take(ones))]
            if ones.size:
                inside.append(ones)                                 # the byte moved to q2: alive
            _use(_tail(scans, trans, accepting, q2, 1), lut, vocab.first_byte_start, follow, inside,
                 hit_idx, hit_off)
    rest = _ranges(keys if small.all() else keys[small.take(firsts)], vocab)
    if rest.size >= SPLIT_MIN:
        rest = _pair_groups(scans, trans, accepting, state, follow, ok[small.take(ok)], rest, inside,
                            hit_idx, hit_off)
    if rest.size:
        scans._walk_uniform(trans.reshape(-1), accepting, follow, rest, 0, state, inside, hit_idx,
                            hit_off)


def _pair_groups(scans, trans, accepting, state, follow, firsts, rest, inside, hit_idx, hit_off):
    """Serve the tokens of `rest` (first byte in `firsts`) whose first two bytes
    lead to a state with a worthwhile (q'', 2) tail from that tail; return the others."""
    vocab = scans.vocab
    q1 = trans[state].take(firsts)                                   # [k]
    t2 = trans.take(q1, axis=0)                                      # [k, 256] after two bytes
    keys = firsts[:, None] * 257 + 1 + np.arange(256)[None, :]        # [k, 256] prefix keys
    counts = vocab.pair_start.take(keys + 1) - vocab.pair_start.take(keys)
    # a crossing right after the first byte is left to the walk
    usable = (t2 >= 0) & (counts > 0) & ~(accepting.take(q1)[:, None] & follow[None, :])
    if not usable.any():
        return rest
    states, keys, counts = t2[usable], keys[usable], counts[usable]
    sizes = np.bincount(states, weights=counts)
    served = np.zeros(256 * 257 + 1, dtype=bool)
    sorted_keys = vocab.sorted_keys
    for q2 in np.flatnonzero(sizes >= SPLIT_MIN).tolist():
        if not _worth(scans, trans, accepting, q2, 2, int(sizes[q2])):
            continue
        lut = np.zeros(256 * 257 + 1, dtype=bool)
        group = keys[states == q2]
        lut[group] = True
        served |= lut
        twos = vocab.pair_start.take(group)                          # two-byte tokens sort first
        twos = twos[vocab.sorted_lengths.take(twos) == 2]
        if twos.size:
            inside.append(twos)                                      # the bytes moved to q2: alive
        _use(_tail(scans, trans, accepting, q2, 2), lut[:-1], vocab.pair_start, follow, inside, hit_idx,
             hit_off)
    if not served.any():
        return rest
    return rest[~served.take(sorted_keys.take(rest))]


def _worth(scans, trans, accepting, q2: int, offset: int, size: int) -> bool:
    """Use a tail for `size` tokens at q2: build one for a big group, or for a wide
    loop state (a string body, "any other key") seen before: those recur in every
    grammar and every key trie node, so the one build is shared. Otherwise only if
    one exists already, looked up only when q2's digest is known (computing it walks
    q2's sub-DFA: a key trie's nodes would each pay milliseconds for a rare hit)."""
    if size < SPLIT_MIN:
        return False
    if size >= SPLIT_BUILD:
        return True
    if int(np.count_nonzero(trans[q2, :128] == q2)) >= WIDE_LOOP:
        # built when the same language comes back (another trie node, another grammar):
        # a one-off wide state (a schema's own pattern) is walked once instead
        key = _tail_key(scans, trans, accepting, q2, offset)
        if key in scans.tails or key in scans.tail_seen:
            return True
        scans.tail_seen.add(key)
        return False
    known = scans.state_digests.get((trans.ctypes.data, trans.shape[0], q2))
    return known is not None and (known[0], offset) in scans.tails


def _use(tail: Tail, lut: np.ndarray, starts: np.ndarray, follow, inside, hit_idx, hit_off) -> None:
    """Add the tail's entries whose group (first byte or prefix key) is in `lut`
    (bool [groups]; group g holds positions starts[g] .. starts[g + 1]); crossings
    only where the next byte may follow. Tokens sort by bytes, so a run of
    selected groups is one range of positions: binary searches in the tail's
    sorted arrays instead of two gathers per entry (~80K entries in a string tail)."""
    edges = np.flatnonzero(np.diff(lut, prepend=False, append=False))  # run begins, ends
    lo, hi = starts.take(edges[0::2]), starts.take(edges[1::2])       # position ranges
    a, b = np.searchsorted(tail.inside, lo), np.searchsorted(tail.inside, hi)
    if len(a) <= FEW_RANGES:
        inside.extend(tail.inside[x:y] for x, y in zip(a.tolist(), b.tolist()) if y > x)
    else:
        inside.append(tail.inside.take(_spans(a, b)))
    if not tail.hit_pos.size:
        return
    pos, off = tail.hits_for(follow)
    a, b = np.searchsorted(pos, lo), np.searchsorted(pos, hi)
    if len(a) <= FEW_RANGES:
        for x, y in zip(a.tolist(), b.tolist()):
            if y > x:
                hit_idx.append(pos[x:y])
                hit_off.append(off[x:y])
    else:
        sel = _spans(a, b)
        hit_idx.append(pos.take(sel))
        hit_off.append(off.take(sel))


def _spans(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Concatenated aranges a[i] .. b[i] (int64, ascending for disjoint ascending spans)."""
    counts = b - a
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    return np.repeat(a - offsets, counts) + np.arange(total, dtype=np.int64)


def _tail_key(scans, trans, accepting, q2: int, offset: int) -> tuple:
    return (scans.state_digest(trans, accepting, q2), offset)


def _tail(scans, trans, accepting, q2: int, offset: int) -> Tail:
    key = _tail_key(scans, trans, accepting, q2, offset)
    got = scans.tails.get(key)
    if got is None:
        vocab = scans.vocab
        longer = scans.positions_longer_than(offset)                 # tokens of > offset bytes
        inside: list[np.ndarray] = []
        hit_idx: list[np.ndarray] = []
        hit_off: list[np.ndarray] = []
        if accepting[q2]:  # the lexeme may end before byte `offset`: a crossing there
            hit_idx.append(longer)
            hit_off.append(np.full(longer.size, offset, dtype=np.int64))
        scans._walk_uniform(trans.reshape(-1), accepting, _ANY, longer, offset, q2, inside, hit_idx,
                            hit_off)
        pos = np.concatenate(hit_idx) if hit_idx else np.zeros(0, np.int64)
        off = np.concatenate(hit_off) if hit_off else np.zeros(0, np.int64)
        order = np.argsort(pos, kind="stable")                       # sorted for _use's searches
        pos, off = pos[order], off[order]
        got = scans.tails[key] = Tail(
            np.sort(np.concatenate(inside)) if inside else np.zeros(0, np.int64), pos, off,
            vocab.sorted_bytes[pos, off] if pos.size else np.zeros(0, np.uint8))
    return got
