"""Root runs of counting-chain states (bounded repetition) without a vocabulary walk.

A state q on a uniform counting chain (chains.py:
every character of one set C leads q = s_0 -> s_1 -> ... -> s_K, as in a
string body with maxLength, or `[a-z]{2,8}`) reads a token made only of C
characters along the chain. Split the vocabulary three ways:

- all-C tokens of at most K characters end on the chain: inside. Their packed
  row depends only on (C, K), so it is cached per vocabulary (K <= 16);
- all-C tokens of more than K characters leave the chain at s_K. When no C
  character can be read from s_K, and s_K cannot end the lexeme before one
  (not accepting, or no first byte of C may follow the lexeme), they die: the
  walk skips them; otherwise they are walked like the rest;
- every other token (one with a character outside C, or not complete UTF-8 text:
  a few thousand in a 129K vocabulary) is walked from q as usual.

Exact: the chain's intermediate states s_1..s_{K-1} are not accepting, so an
all-C token crosses no lexeme boundary before s_K, and the DFA is
deterministic, so its path is the chain's. Why: each chain state used to pay
a full walk of the vocabulary (15-60 ms), and bounded strings are common.
Knows nothing about parsing.
"""

from __future__ import annotations

import numpy as np

from ...regular.chains import LazySteps, bucket_bits, chain, loop_bits, loop_cover
from ...regular.mask_bits import pack_mask

LAZY_STATES = 256  # bigger lexeme DFAs get character steps per visited state (chains.LazySteps)
# first bytes of the 2-, 3- and 4-byte character buckets (chains.BUCKETS 128..130)
_LEADS = ((128, 0xC2, 0xDF), (129, 0xE0, 0xEF), (130, 0xF0, 0xF4))


def chain_split(scans, trans, accepting, state: int, follow, live: np.ndarray, max_rest: int):
    """(base row int32 [words] read-only, positions to walk int64 ascending) or None
    when `state` is not on a uniform chain with non-accepting intermediate states,
    or when `max_rest` or more tokens would be left to walk.
    `live`: bool [256 * 257] prefix keys that can be read from `state` (scan._live_keys)."""
    if not may_chain(trans, accepting, state):
        return None
    key = (trans.ctypes.data, trans.shape[0])
    hit = scans.char_loops.get(key)
    if hit is None:
        steps = loop_bits(trans) if trans.shape[0] <= LAZY_STATES else LazySteps(trans)
        hit = scans.char_loops[key] = (steps, trans)  # keep trans alive
    ch = chain(hit[0], state)
    if ch is None:
        return None
    inter, ends = ch
    if accepting.take(ends[1:-1]).any() or not _uniform(hit[0], inter, ends):
        return None
    limit = len(inter) - 1
    vocab = scans.vocab
    cover = loop_cover(vocab, inter[1])
    rest = cover.rest[live.take(cover.rest_keys)]
    if rest.size >= max_rest:
        return None
    if not _dies_after(trans, accepting, follow, int(ends[-1]), inter[1]):
        long = cover.longer_than(vocab, limit)
        long = long[live.take(vocab.sorted_keys.take(long))]
        if long.size + rest.size >= max_rest:
            return None
        rest = np.concatenate([rest, long])  # disjoint: covered vs not
    return _short_row(scans, cover, inter[1], limit), rest


def may_chain(trans, accepting, state: int) -> bool:
    """Cheap test on ASCII bytes before the per-DFA character tables: the state's
    most common successor t is not accepting and t steps to its own most common
    successor on the same ASCII bytes (a chain of one character set), and that
    set is not tiny. Rejects key tries, literals and number states at once."""
    row = trans[state, :128]
    live = row[row >= 0]
    if live.size < 8:
        return False
    t = int(np.bincount(live).argmax())
    if accepting[t]:
        return False
    row2 = trans[t, :128]
    live2 = row2[row2 >= 0]
    if live2.size < 8:
        return False
    t2 = int(np.bincount(live2).argmax())
    return bool(((row == t) == (row2 == t2)).all())


def _uniform(loops, inter: np.ndarray, ends: np.ndarray) -> bool:
    """Every chain state steps to the next on exactly the same character set.
    Why: chains.chain intersects the sets along the way, so a key trie node
    (few letters to a child, the rest to "any other key") makes a chain over
    that node's small set whose cover misses most tokens; tails do better there."""
    steps = np.stack([loops.steps[q] for q in ends[:-1].tolist()])   # [K, 131]
    raw = bucket_bits(steps == ends[1:, None])                       # [K, 3]
    return bool((raw == inter[1]).all())


def _short_row(scans, cover, bits: np.ndarray, limit: int) -> np.ndarray:
    """Packed row of the covered tokens of at most `limit` characters (cached)."""
    key = (bits.tobytes(), limit)
    row = scans.chain_rows.get(key)
    if row is None:
        long = cover.longer_than(scans.vocab, limit)
        row = cover.row
        if long.size:
            row = row & ~pack_mask(scans.vocab.sorted_ids.take(long), scans.vocab)
        row.flags.writeable = False
        scans.chain_rows[key] = row
    return row


def _dies_after(trans, accepting, follow, end: int, bits: np.ndarray) -> bool:
    """No character of the set `bits` (uint64 [3] over chains' buckets) is readable
    from `end`, and the lexeme cannot end there with such a character next."""
    firsts = _first_bytes(bits)                                   # bool [256]
    if (trans[end] >= 0)[firsts].any():
        return False
    return not (accepting[end] and follow[firsts].any())


def _first_bytes(bits: np.ndarray) -> np.ndarray:
    """bool [256]: the bytes a character of the bucket set can start with."""
    flags = np.unpackbits(bits.view(np.uint8), bitorder="little")   # [192] bucket flags
    out = np.zeros(256, dtype=bool)
    out[:128] = flags[:128].astype(bool)
    for bucket, lo, hi in _LEADS:
        if flags[bucket]:
            out[lo:hi + 1] = True
    return out
