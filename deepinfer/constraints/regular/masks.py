"""Token masks of DFA states, computed for the whole vocabulary at once.

Owns the vectorized walk of every token's bytes through a byte DFA from one
state (numpy, no Python loop over tokens: one loop step per byte position);
the allowed-token sets it finds are packed into rows by mask_bits.py. Knows
nothing about regexes, grammars or the matcher.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .chains import Loops, chain, chain_cover, chain_parts, loop_bits, loop_cover
from .mask_bits import pack_mask
from ..vocab import SIG_LEVELS, Vocabulary

_EMPTY = np.zeros(0, dtype=np.int32)


def live_keys(trans: np.ndarray, state: int) -> np.ndarray | None:
    """bool [256 * 257]: which token prefix keys (vocab.pair_start) survive from
    `state`: key b0 * 257 for one-byte tokens, b0 * 257 + 1 + b1 for longer ones.
    None if no byte is allowed."""
    row0 = trans[state]
    b0 = np.flatnonzero(row0 >= 0)                         # [k0] live first bytes
    if not b0.size:
        return None
    live = np.zeros((256, 257), dtype=bool)
    live[b0, 0] = True
    live[b0, 1:] = trans[row0[b0]] >= 0
    return live.reshape(-1)


def token_candidates(trans: np.ndarray, state: int, vocab: Vocabulary) -> np.ndarray:
    """Positions (into vocab.sorted_*) of tokens whose first two bytes survive
    from `state` (one-byte tokens: whose byte does), ascending."""
    live = live_keys(trans, state)
    if live is None:
        return np.zeros(0, dtype=np.int64)
    return _ranges(np.flatnonzero(live), vocab)


RANGES_BY_MASK = 20_000  # above this many positions, _ranges expands a per-key mask (2x faster)


def _ranges(keys: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """The positions of all tokens with these prefix keys (distinct), ascending."""
    starts = vocab.pair_start[keys]
    counts = vocab.pair_start[keys + 1] - starts
    total = int(counts.sum())
    if total == len(vocab.sorted_ids):
        return np.arange(total, dtype=np.int64)
    if total > RANGES_BY_MASK:  # many positions: a bool per position is cheaper than index math
        live = np.zeros(len(vocab.pair_counts), dtype=bool)
        live[keys] = True
        return np.flatnonzero(np.repeat(live, vocab.pair_counts))
    nz = np.flatnonzero(counts)
    starts, counts = starts[nz], counts[nz]
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def walk_tokens(trans: np.ndarray, state: int, vocab: Vocabulary,
                loops: "Loops | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """Tokens whose bytes, read from `state` of the DFA `trans` (int32 [S, 256],
    -1 dead), never reach a dead transition: (token ids int32 [k], end states [k]),
    ids in no particular order.

    One numpy step per byte position over the tokens still alive. With `loops`
    (loop_bits(trans)), tokens whose remaining characters all loop on the state
    reached after 0..3 bytes finish at once, which makes "any text" states cheap.
    """
    idx = token_candidates(trans, state, vocab)             # [k] positions in sorted order
    head_idx, head_state = [], []
    if loops is not None and loops.any[state]:              # level 0, shared per loop set
        hit = loop_cover(vocab, loops.bits[state]).covered.take(idx)
        head_idx.append(idx[hit])
        head_state.append(np.full(int(hit.sum()), state, dtype=np.int32))
        idx = idx[~hit]
    elif loops is not None and (ch := chain(loops, state)) is not None:
        hit = chain_cover(vocab, ch[0]).covered.take(idx)
        head_idx.append(idx[hit])
        head_state.append(ch[1].take(vocab.sorted_nchars.take(idx[hit])))
        idx = idx[~hit]
    pos, ends = _walk(trans, state, vocab, idx, loops)
    pos = np.concatenate(head_idx + [pos]) if head_idx else pos
    ends = np.concatenate(head_state + [ends]) if head_state else ends
    return vocab.sorted_ids.take(pos), ends


def state_mask(trans: np.ndarray, state: int, vocab: Vocabulary, loops: "Loops") -> np.ndarray:
    """The packed int32 row [ceil(V/32)] of text tokens allowed in `state`.

    Tokens made only of characters looping on `state`, or following a counting
    chain from it (chains.py), come from a per-vocabulary cache keyed by the
    character sets (every JSON string body shares one), so only the other
    candidates are walked."""
    live = live_keys(trans, state)
    if live is None:
        return np.zeros(vocab.words, dtype=np.int32)
    cover = limit = base = None
    if loops.any[state]:
        cover = loop_cover(vocab, loops.bits[state])
        base = cover.row
    elif (ch := chain(loops, state)) is not None:
        cover, limit, base = chain_parts(vocab, ch[0])
    keys = np.flatnonzero(live)
    if cover is None:
        idx = _ranges(keys, vocab)
    else:
        long = cover.longer_than(vocab, limit) if limit is not None else np.zeros(0, np.int64)
        candidates = int((vocab.pair_start[keys + 1] - vocab.pair_start[keys]).sum())
        if candidates <= cover.rest.size + long.size:  # few candidates: filter them
            idx = _ranges(keys, vocab)
            done = cover.covered.take(idx)
            if limit is not None:
                done &= vocab.sorted_nchars.take(idx) <= limit
            idx = idx[~done]
        else:                                           # most tokens covered: filter the rest
            idx = cover.rest[live.take(cover.rest_keys)]
            if long.size:
                idx = np.concatenate([idx, long[live.take(vocab.sorted_keys.take(long))]])
    pos, _ = _walk(trans, state, vocab, idx, loops)
    row = pack_mask(vocab.sorted_ids.take(pos), vocab)
    return row if base is None else np.bitwise_or(row, base)


def _walk(trans, state: int, vocab: Vocabulary, idx: np.ndarray, loops: "Loops | None"):
    """Walk candidate positions `idx` from `state`: (positions int64, end states int32)."""
    if not idx.size:
        return np.zeros(0, dtype=np.int64), _EMPTY
    flat = trans.reshape(-1)
    cols = vocab.sorted_bytes_T
    done_idx, done_state = [], []
    cur = trans[state].take(cols[0].take(idx))              # [k] state after byte 0
    lens = vocab.sorted_lengths.take(idx)
    neg = loops.neg if loops is not None else None
    j = 1
    while idx.size:
        done = lens <= j
        if neg is not None:
            # Past the stored suffix signatures, the whole token's characters are a
            # (conservative) stand-in for its suffix's.
            done |= _covered(vocab, j if j < SIG_LEVELS else 0, idx, cur, loops)
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
        return np.zeros(0, dtype=np.int64), _EMPTY
    return np.concatenate(done_idx), np.concatenate(done_state).astype(np.int32)


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


def _covered(vocab: Vocabulary, j: int, idx: np.ndarray, cur: np.ndarray, loops: "Loops") -> np.ndarray:
    """bool [k]: the suffix from byte j of token idx[i] only has characters looping on cur[i].

    Many tokens in few states (the usual case right after the first byte): use
    per-vocabulary cached cover arrays per loop set; otherwise gather signatures."""
    if idx.size > 4096:
        states = np.flatnonzero(np.bincount(cur, minlength=1))
        looping = states[loops.any.take(states)]
        if looping.size <= 4:
            if looping.size == 1 and states.size == 1:
                return _cover_at(vocab, j, loops.bits[looping[0]]).take(idx)
            out = np.zeros(idx.size, dtype=bool)
            for u in looping.tolist():
                sel = np.flatnonzero(cur == u)
                out[sel] = _cover_at(vocab, j, loops.bits[u]).take(idx.take(sel))
            return out
    return ~_uncovered(vocab.sig_words[j], idx, loops.neg, cur)


def _cover_at(vocab: Vocabulary, j: int, bits: np.ndarray) -> np.ndarray:
    """bool [n]: token suffixes from byte j whose characters are all in `bits` (cached)."""
    cache = vocab.mask_cache.setdefault("cover_at", OrderedDict())
    key = (j, bits.tobytes())
    hit = cache.get(key)
    if hit is None:
        neg, sig = ~bits, vocab.sig_words[j]
        hit = cache[key] = ((sig[0] & neg[0]) | (sig[1] & neg[1]) | (sig[2] & neg[2])) == 0
        while len(cache) > 256:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return hit


def _uncovered(sig_words, idx: np.ndarray, neg_loops: list[np.ndarray], cur: np.ndarray) -> np.ndarray:
    """bool [k]: the suffix of token idx[i] has a character outside the loop of state cur[i]."""
    out = None
    for w in range(3):
        part = sig_words[w].take(idx) & neg_loops[w].take(cur)
        out = part if out is None else out | part
    return out != 0
