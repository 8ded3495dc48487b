"""Vectorized walks of token entries through one lexeme DFA, one numpy step per byte.

Owns the byte walks a ScanCache run is made of: entries all at one offset
(`walk_uniform`, column-major reads, with the loop-signature shortcut), entries
at mixed offsets (`walk_offsets`), the per-DFA loop table (`loop_table`), the
root loop shortcut (`loop_shortcut`), and the prefix-key pruning of a root run
(`live_keys`, `keys_from`). Plain functions over a ScanCache `scans` (its
vocabulary, signatures and caches); ScanCache binds the first four as methods
(so callers and tests keep `scans._walk_uniform(...)`). Must not know how runs
are chosen, keyed or cached (scan.py), nor anything about parsing.
"""

from __future__ import annotations

import numpy as np

from ...regular.masks import _ranges
from .few_walks import FEW_TOKENS, finish_few
from .tables import SIG_LEVELS


def walk_uniform(scans, flat, accepting, follow, idx, j, state, inside, hit_idx, hit_off):
    """Entries all at offset j (the root scope, or a group): column-major byte reads."""
    cols = scans.vocab.sorted_bytes_T                           # [width, n]
    cur = np.full(idx.shape, state, dtype=np.int64)
    lens = scans.vocab.sorted_lengths[idx]
    loop_bits, loop_ok = scans._loops(flat.reshape(-1, 256), accepting, follow)
    loops = bool(loop_ok.any())
    while idx.size:
        if idx.size <= FEW_TOKENS:  # a few long tokens left: byte by byte (few_walks.py)
            finish_few(scans.sorted_tokens(), flat, accepting, follow, idx, j, cur, inside, hit_idx, hit_off)
            return
        # rests that loop on their state: inside. Past the stored suffix signatures the
        # whole token's bytes stand in for its rest's (a superset: sound, catches fewer),
        # e.g. a key's letters once it has left the trie for the "any other key" state
        if loops and (j < SIG_LEVELS or loop_ok.take(cur).any()):
            level = j if j < SIG_LEVELS else 0
            sig = scans.ascii_sig[level].take(idx, axis=0)          # [k, 2]
            bits = loop_bits.take(cur, axis=0)                     # [k, 2]
            stay = (loop_ok.take(cur) & ~scans.non_ascii[level].take(idx)
                    & ((sig[:, 0] & ~bits[:, 0]) == 0) & ((sig[:, 1] & ~bits[:, 1]) == 0))
            if stay.any():
                inside.append(idx[stay])
                keep = ~stay
                idx, cur, lens = idx[keep], cur[keep], lens[keep]
                if not idx.size:
                    break
        cur = flat.take(cur * 256 + cols[j].take(idx))          # [k] state after byte j
        j += 1
        live = cur >= 0
        end = lens == j
        done = live & end
        if done.any():
            inside.append(idx[done])
        keep = live & ~end
        idx, cur, lens = idx[keep], cur[keep].astype(np.int64), lens[keep]
        acc = accepting.take(cur)
        if acc.any():
            cand = idx[acc]
            cand = cand[follow.take(cols[j].take(cand))]
            if cand.size:
                hit_idx.append(cand)
                hit_off.append(np.full(cand.size, j, dtype=np.int64))

def walk_offsets(scans, flat, accepting, follow, idx, off, cur, lens, inside, hit_idx, hit_off):
    mat = scans.vocab.sorted_bytes
    while idx.size:
        cur = flat.take(cur * 256 + mat[idx, off])              # [k] state after one more byte
        off = off + 1
        live = cur >= 0
        end = lens == off
        done = live & end
        if done.any():
            inside.append(idx[done])
        keep = live & ~end
        idx, cur, lens, off = idx[keep], cur[keep].astype(np.int64), lens[keep], off[keep]
        acc = accepting.take(cur)
        if acc.any():
            ok = follow.take(mat[idx[acc], off[acc]])
            if ok.any():
                hit_idx.append(idx[acc][ok])
                hit_off.append(off[acc][ok])

def loop_table(scans, trans, accepting, follow) -> tuple[np.ndarray, np.ndarray]:
    """Per state: uint64 [S, 2] ASCII bytes looping on it, and bool [S] whether a
    token whose rest loops there is simply inside (not accepting, or no looping
    byte may follow the lexeme, so no boundary can be crossed)."""
    key = (trans.ctypes.data, trans.shape[0], follow.tobytes())
    hit = scans.loops.get(key)
    if hit is None:
        me = np.arange(trans.shape[0])[:, None]
        loop = trans[:, :128] == me                                   # bool [S, 128]
        bits = np.packbits(loop, axis=1, bitorder="little").view("<u8")
        ok = loop.any(axis=1) & (~accepting | ~(loop & follow[None, :128]).any(axis=1))
        hit = scans.loops[key] = (np.ascontiguousarray(bits), ok, trans)  # keep trans alive
    return hit[0], hit[1]

def loop_shortcut(scans, trans, accepting, state, follow, keys):
    """Split the candidates (prefix keys `keys`) into the rest and the ASCII tokens
    all of whose bytes loop on `state` (they stay in it: inside, and no boundary
    where a follow byte could come next); (None, None) if that does not apply."""
    loop = trans[state, :128] == state                               # bool [128]
    if loop.sum() < 8 or (accepting[state] and (loop & follow[:128]).any()):
        return None, None
    idx = _ranges(keys, scans.vocab)
    bits = np.packbits(loop, bitorder="little").view("<u8")          # uint64 [2]
    sig = scans.ascii_sig[0][idx]
    stays = ~scans.non_ascii[0][idx] & ((sig[:, 0] & ~bits[0]) == 0) & ((sig[:, 1] & ~bits[1]) == 0)
    return idx[~stays], idx[stays]


def keys_from(trans, accepting, state: int, follow, firsts: np.ndarray) -> np.ndarray:
    """int64 ascending: the prefix keys live_keys marks, for the first bytes `firsts`
    only (live from `state`, ascending). Why: a key-trie node walks only its few
    non-shared first bytes; the full [256, 257] table cost ~100 us per node."""
    if not firsts.size:
        return np.zeros(0, np.int64)
    q1 = trans[state].take(firsts)                                   # [k]
    table = np.ones((firsts.size, 257), dtype=bool)                  # column 0: one-byte tokens
    table[:, 1:] = (trans.take(q1, axis=0) >= 0) | (accepting.take(q1)[:, None] & follow[None, :])
    rows, cols = np.nonzero(table)
    return firsts.astype(np.int64).take(rows) * 257 + cols


def live_keys(trans, accepting, state: int, follow) -> np.ndarray | None:
    """bool [256 * 257]: the prefix keys (vocab.pair_start) of tokens whose first two
    bytes can be read from `state`: the second byte inside the lexeme, or starting
    the next one (after an accepting state, a byte of the follow set); None if no
    byte can. Prunes key tries and literals to a few hundred tokens before any walk."""
    row0 = trans[state]
    b0 = np.flatnonzero(row0 >= 0)
    if not b0.size:
        return None
    q1 = row0.take(b0)
    live = np.zeros((256, 257), dtype=bool)
    live[b0, 0] = True
    live[b0, 1:] = (trans[q1] >= 0) | (accepting.take(q1)[:, None] & follow[None, :])
    return live.reshape(-1)


