"""Token masks of DFA states, computed for the whole vocabulary at once.

Owns the vectorized walk of every token's bytes through a byte DFA from one
state (numpy, no Python loop over tokens: one loop step per byte position),
and packing allowed-token sets into int32 bitmask rows. Knows nothing about
regexes, grammars or the matcher.
"""

from __future__ import annotations

import numpy as np

from .vocab import Vocabulary

_EMPTY = np.zeros(0, dtype=np.int32)


def token_candidates(first_ok: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """Positions (into vocab.sorted_*) of tokens whose first byte is in `first_ok`."""
    starts = vocab.first_byte_start[first_ok]
    counts = vocab.first_byte_start[first_ok + 1] - starts
    total = int(counts.sum())
    if total == len(vocab.sorted_ids):
        return np.arange(total, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def walk_tokens(trans: np.ndarray, state: int, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """Tokens whose bytes, read from `state` of the DFA `trans` (int32 [S, 256],
    -1 dead), never reach a dead transition: (token ids int32 [k], end states [k]),
    ids in no particular order."""
    row0 = trans[state]
    first_ok = np.flatnonzero(row0 >= 0)
    if not first_ok.size:
        return _EMPTY, _EMPTY
    flat = trans.reshape(-1)
    mat = vocab.sorted_bytes
    idx = token_candidates(first_ok, vocab)                 # [k] positions in sorted order
    cur = row0[mat[idx, 0]]                                 # [k] state after byte 0
    lens = vocab.sorted_lengths[idx]
    done_idx, done_state = [], []
    j = 1
    while idx.size:
        done = lens <= j
        if done.any():
            done_idx.append(idx[done])
            done_state.append(cur[done])
            keep = ~done
            idx, cur, lens = idx[keep], cur[keep], lens[keep]
            if not idx.size:
                break
        cur = flat[cur.astype(np.int64) * 256 + mat[idx, j]]
        ok = cur >= 0
        if not ok.all():
            idx, cur, lens = idx[ok], cur[ok], lens[ok]
        j += 1
    if not done_idx:
        return _EMPTY, _EMPTY
    return vocab.sorted_ids[np.concatenate(done_idx)], np.concatenate(done_state).astype(np.int32)


def pack_mask(token_ids: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """int32 [ceil(V/32)] row with bit (i % 32) of word i // 32 set for each id."""
    bits = np.zeros(vocab.words * 32, dtype=bool)
    bits[token_ids] = True
    return np.packbits(bits, bitorder="little").view("<i4").astype(np.int32, copy=False)


def set_eos_bits(row: np.ndarray, vocab: Vocabulary) -> None:
    """Allow every end-of-sequence id in `row` (in place)."""
    if vocab.eos_word_index.size:
        np.bitwise_or.at(row, vocab.eos_word_index, vocab.eos_word_bits)


def clear_eos_bits(row: np.ndarray, vocab: Vocabulary) -> None:
    if vocab.eos_word_index.size:
        np.bitwise_and.at(row, vocab.eos_word_index, ~vocab.eos_word_bits)
