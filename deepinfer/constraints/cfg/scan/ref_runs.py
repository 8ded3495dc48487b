"""Root runs of a state that agrees with a loop state on most bytes (a key-trie node).

In the DFA of `"` K `":` (K: any key but the
listed ones), a trie node q reads almost every byte exactly like the string-
body state G: ~95 characters go to G itself and every UTF-8 lead byte to the
same continuation states; only the next letters of listed keys, and a few
bytes such as `"`, differ. Reading a token from q or from G is then the same
walk once its first byte b has trans[q, b] == trans[G, b] (deterministic: every
later step depends only on the state). So the root run of q is G's root run
(computed once per DFA and follow set, cached) restricted to those first bytes,
plus an ordinary root run over the tokens starting with the other bytes.
Each trie node used to walk its UTF-8 groups (~3K tokens, up to 33 bytes
deep) and pack ~100K positions: ~2 ms per first visit, at every property key.

Of the tokens that start with a listed key's next letter, those whose second byte
leaves the trie (to G itself) are read from G after two bytes: G's two-byte tail
(tails.py, built once: every key trie has the same G) serves them, and only the few
that stay in the trie are walked.

Exact by the argument above; G's run is itself a plain root run (G's most
common target is G), so this never recurses further. Knows nothing about parsing.
"""

from __future__ import annotations

import numpy as np

from ...regular.mask_bits import pack_mask
from .tails import _tail as tail_of, _use as tail_use

REF_MIN_BYTES = 32  # first bytes shared with the loop state before it pays to use its run
REF_PAIR_MIN = 128  # tokens leaving the trie at their second byte before G's tail pays


def reference_state(trans: np.ndarray, state: int) -> tuple[int, np.ndarray] | None:
    """(G, bool [256] first bytes b with trans[state, b] == trans[G, b]) for the most
    common target G of `state` when G != state and G's own most common target is G."""
    row = trans[state]
    targets = row[row >= 0]
    if targets.size < REF_MIN_BYTES:
        return None
    g = int(np.bincount(targets).argmax())
    if g == state:
        return None
    same = (row >= 0) & (trans[g] == row)
    if int(same.sum()) < REF_MIN_BYTES:
        return None
    own = trans[g][trans[g] >= 0]
    if int(np.bincount(own).argmax()) != g:
        return None
    return g, same


def reference_part(scans, base, same: np.ndarray, g_live: np.ndarray, hit_idx: list,
                   hit_off: list) -> np.ndarray:
    """int32 [words] packed inside tokens of the run `base` (of G; bool [256] g_live: its
    live first bytes) whose first byte is in `same`; appends its crossings with such a
    first byte to hit_idx / hit_off."""
    vocab = scans.vocab
    row = base.inside_row if base.inside_row is not None else pack_mask(base.inside_ids, vocab)
    row = np.array(row, dtype=np.int32)  # a copy: cached runs are shared
    starts = vocab.first_byte_start
    for b in np.flatnonzero(g_live & ~same).tolist():  # a few bytes: trie letters, '"'
        if starts[b + 1] > starts[b]:
            np.bitwise_and(row, ~_first_byte_row(scans, b), out=row)
    if base.child is not None:
        scope = scans.scopes[base.child]
        keep = same.take(vocab.sorted_bytes_T[0].take(scope.positions))
        if keep.any():
            hit_idx.append(scope.positions[keep])
            hit_off.append(scope.offsets[keep])
    return row


def reference_pairs(scans, trans, accepting, state: int, g: int, follow, keys: np.ndarray,
                    inside: list, hit_idx: list, hit_off: list) -> np.ndarray:
    """Serve the tokens of prefix keys `keys` (first bytes not shared with G) whose first
    two bytes lead from `state` to G itself (a key's next letter, then any other letter:
    the name has left the trie) from G's two-byte tail (tails.py; G recurs in every key
    trie, so its tail is built once); return the keys left to walk.

    Exact as tails._pair_groups: after those two bytes the token is read from G, and a
    crossing right after the first byte (an accepting state there, a follow byte next)
    is left to the walk."""
    vocab = scans.vocab
    pair = keys[keys % 257 != 0]                                     # tokens of 2+ bytes
    if not pair.size:
        return keys
    q1 = trans[state].take(pair // 257)                               # [k] after the first byte
    t2 = trans[q1, pair % 257 - 1]                                   # [k] after the second
    to_g = (t2 == g) & ~(accepting.take(q1) & follow.take(pair % 257 - 1))
    group = pair[to_g]
    counts = vocab.pair_start.take(group + 1) - vocab.pair_start.take(group)
    group = group[counts > 0]  # an empty key's start is the next key's first token
    if int(counts.sum()) < REF_PAIR_MIN:
        return keys
    twos = vocab.pair_start.take(group)                              # two-byte tokens sort first
    twos = twos[vocab.sorted_lengths.take(twos) == 2]
    if twos.size:
        inside.append(twos)                                          # the bytes moved to G: alive
    lut = np.zeros(256 * 257, dtype=bool)
    lut[group] = True
    tail_use(tail_of(scans, trans, accepting, g, 2), lut, vocab.pair_start, follow, inside, hit_idx, hit_off)
    served = np.zeros(256 * 257, dtype=bool)
    served[group] = True
    return keys[~served.take(keys)]


def _first_byte_row(scans, b: int) -> np.ndarray:
    """int32 [words] packed ids of the tokens that start with byte b (cached per vocabulary)."""
    rows = scans.first_byte_rows
    got = rows.get(b)
    if got is None:
        vocab = scans.vocab
        ids = vocab.sorted_ids[vocab.first_byte_start[b]:vocab.first_byte_start[b + 1]]
        got = rows[b] = pack_mask(np.asarray(ids, dtype=np.int32), vocab)
    return got
