"""Token masks of DFA states, computed for the whole vocabulary at once.

Owns the vectorized walk of every token's bytes through a byte DFA from one
state (numpy, no Python loop over tokens: one loop step per byte position),
and packing allowed-token sets into int32 bitmask rows. Knows nothing about
regexes, grammars or the matcher.
"""

from __future__ import annotations

import numpy as np

from .nfa import utf8_sequences
from .vocab import SIG_LEVELS, Vocabulary

_EMPTY = np.zeros(0, dtype=np.int32)
# Signature bits 128/129/130 stand for "every 2-/3-/4-byte character".
_MULTIBYTE = ((0, 0x80, 0x7FF), (1, 0x800, 0xD7FF), (1, 0xE000, 0xFFFF), (2, 0x10000, 0x10FFFF))


def loop_bits(trans: np.ndarray) -> np.ndarray:
    """uint64 [S, 3]: per state, the signature bits (see vocab.SIG_LEVELS) of the
    characters that lead from the state back to itself. A token whose suffix
    signature is covered stays in the state (the loop shortcut of walk_tokens)."""
    n = trans.shape[0]
    me = np.arange(n, dtype=np.int64)
    ascii_loop = trans[:, :128] == me[:, None]                          # [S, 128]
    out = np.zeros((n, 3), dtype=np.uint64)
    out[:, :2] = np.packbits(ascii_loop, axis=1, bitorder="little").view("<u8")
    multi = np.ones((n, 3), dtype=bool)
    for bit, lo, hi in _MULTIBYTE:
        for seq in utf8_sequences(lo, hi):
            cur, ok = me.copy(), np.ones(n, dtype=bool)
            for b_lo, b_hi in seq:
                block = trans[np.maximum(cur, 0), b_lo:b_hi + 1]        # [S, k]
                ok &= (cur >= 0) & (block == block[:, :1]).all(axis=1)
                cur = block[:, 0].astype(np.int64)
            multi[:, bit] &= ok & (cur == me)
    out[:, 2] = (multi * (np.uint64(1) << np.arange(3, dtype=np.uint64))).sum(axis=1).astype(np.uint64)
    return out


def token_candidates(trans: np.ndarray, state: int, vocab: Vocabulary) -> np.ndarray:
    """Positions (into vocab.sorted_*) of tokens whose first two bytes survive
    from `state` (one-byte tokens: whose byte does), ascending."""
    row0 = trans[state]
    b0 = np.flatnonzero(row0 >= 0)                         # [k0] live first bytes
    if not b0.size:
        return np.zeros(0, dtype=np.int64)
    live = np.empty((b0.size, 257), dtype=bool)            # [k0, 1 + 256] prefix keys
    live[:, 0] = True
    live[:, 1:] = trans[row0[b0]] >= 0
    rows, cols = np.nonzero(live)
    keys = b0[rows] * 257 + cols
    starts = vocab.pair_start[keys]
    counts = vocab.pair_start[keys + 1] - starts
    total = int(counts.sum())
    if total == len(vocab.sorted_ids):
        return np.arange(total, dtype=np.int64)
    nz = np.flatnonzero(counts)
    starts, counts = starts[nz], counts[nz]
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def walk_tokens(trans: np.ndarray, state: int, vocab: Vocabulary,
                loops: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Tokens whose bytes, read from `state` of the DFA `trans` (int32 [S, 256],
    -1 dead), never reach a dead transition: (token ids int32 [k], end states [k]),
    ids in no particular order.

    One numpy step per byte position over the tokens still alive. With `loops`
    (loop_bits(trans)), tokens whose remaining characters all loop on the state
    reached after 0..3 bytes finish at once, which makes "any text" states cheap.
    """
    row0 = trans[state]
    idx = token_candidates(trans, state, vocab)             # [k] positions in sorted order
    if not idx.size:
        return _EMPTY, _EMPTY
    flat = trans.reshape(-1)
    cols = vocab.sorted_bytes_T
    done_idx, done_state = [], []
    if loops is not None:  # level 0: tokens made only of characters looping on `state`
        miss = _uncovered(vocab.sig_words[0], idx, ~loops[state])
        hit = np.flatnonzero(~miss)
        if hit.size:
            done_idx.append(idx[hit])
            done_state.append(np.full(hit.size, state, dtype=np.int32))
            idx = idx[np.flatnonzero(miss)]
    cur = row0[cols[0].take(idx)]                           # [k] state after byte 0
    lens = vocab.sorted_lengths.take(idx)
    neg = [np.ascontiguousarray(~loops[:, w]) for w in range(3)] if loops is not None else None
    j = 1
    while idx.size:
        done = lens <= j
        if neg is not None and j < SIG_LEVELS:
            done |= ~_uncovered(vocab.sig_words[j], idx, neg, cur)
        if done.any():
            fin = np.flatnonzero(done)
            done_idx.append(idx.take(fin))
            done_state.append(cur.take(fin))
            rest = np.flatnonzero(~done)
            idx, cur, lens = idx.take(rest), cur.take(rest), lens.take(rest)
        if not idx.size or j >= cols.shape[0]:
            break
        if idx.size <= _FEW:  # a handful of long tokens left: finish them in Python
            ids, states = _finish_few(trans, vocab, idx.tolist(), cur.tolist(), j)
            done_idx.append(ids)
            done_state.append(states)
            break
        nxt = flat.take(cur.astype(np.int64) * 256 + cols[j].take(idx))
        alive = nxt >= 0
        if not alive.all():
            keep = np.flatnonzero(alive)
            idx, nxt, lens = idx.take(keep), nxt.take(keep), lens.take(keep)
        cur = nxt
        j += 1
    if not done_idx:
        return _EMPTY, _EMPTY
    return vocab.sorted_ids.take(np.concatenate(done_idx)), np.concatenate(done_state).astype(np.int32)


_FEW = 24


def _finish_few(trans, vocab, idx: list[int], cur: list[int], j: int):
    """Walk the remaining bytes (from position j) of a few tokens one by one."""
    out_idx, out_state = [], []
    for pos, state in zip(idx, cur):
        data = vocab.token_bytes[int(vocab.sorted_ids[pos])]
        for byte in data[j:]:
            state = int(trans[state, byte])
            if state < 0:
                break
        else:
            out_idx.append(pos)
            out_state.append(state)
    return np.array(out_idx, dtype=np.int64), np.array(out_state, dtype=np.int32)


def _uncovered(sig_words, idx: np.ndarray, neg_loops: np.ndarray, cur=None) -> np.ndarray:
    """bool [k]: the token suffix has a character outside the loop of its state.

    neg_loops: ~loop bits, uint64 [3] (one state), or 3 arrays uint64 [S] indexed by `cur`."""
    n = sig_words[0].size
    if cur is None and 2 * idx.size > n:  # dense: test every token, then select
        out = (sig_words[0] & neg_loops[0]) | (sig_words[1] & neg_loops[1]) | (sig_words[2] & neg_loops[2])
        return (out != 0) if idx.size == n else (out != 0).take(idx)
    out = None
    for w in range(3):
        sig = sig_words[w].take(idx)
        mask = neg_loops[w] if cur is None else neg_loops[w].take(cur)
        part = sig & mask
        out = part if out is None else out | part
    return out != 0


def pack_mask(token_ids: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """int32 [ceil(V/32)] row with bit (i % 32) of word i // 32 set for each id."""
    if token_ids.size * 8 < vocab.size:  # sparse: OR the bits of each word (duplicates ok)
        out = np.zeros(vocab.words, dtype=np.uint32)
        if token_ids.size:
            ids = np.sort(token_ids.astype(np.int64))
            word = ids >> 5
            bits = np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32))
            starts = np.flatnonzero(np.concatenate(([True], word[1:] != word[:-1])))
            out[word[starts]] = np.bitwise_or.reduceat(bits, starts)
        return out.view(np.int32)
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
