"""Whole masks of the context-free automaton, remembered per canonical parser state.

A CfgState's mask depends only on its last item set, its threads and the sets they
started at; Earley gives every set a canonical id (earley.py `ItemSet.sid`) that is
equal across charts exactly when the items are, so (automaton, last set id, threads
with their origin sets' ids) names the mask whatever request, position or chart the
state is in. Why: a schema served again (or an array of like objects) passes through
the same states, and recomputing their masks is most of a step that is not cold.

Rows are kept in a per-vocabulary LRU bounded in bytes; a row with few nonzero words
is kept as its fill word
(0 or all ones) and the (indices, values) of the other words. Knows nothing about how masks are computed.
"""

from __future__ import annotations

import itertools
from array import array

import numpy as np

from ...regular.automaton import MaskCache
from ...vocab import Vocabulary

STATE_MASK_BYTES = 128 << 20  # per vocabulary
SPARSE = 4  # keep only the nonzero words when fewer than 1/SPARSE of them are nonzero

_uids = itertools.count(1)


def automaton_uid() -> int:
    """A number no other automaton of this process has (the first part of its keys)."""
    return next(_uids)


def state_masks(vocab: Vocabulary) -> MaskCache:
    cache = vocab.mask_cache.get("cfg_states")
    if cache is None:
        cache = vocab.mask_cache.setdefault("cfg_states", MaskCache(STATE_MASK_BYTES))
    return cache


def state_key(uid: int, chart, threads) -> bytes | None:
    """(uid, last set id, then lexeme, origin set id, DFA code per thread) as int64 bytes,
    or None when a set involved is not interned. Bytes, not a tuple: a bytes object
    hashes once, a tuple of ~200 ints (an object's remaining properties) at every dict
    operation (the lookup, then the put)."""
    last = chart[len(chart) - 1].sid
    if last < 0:
        return None
    key = [uid, last]
    sids: dict[int, int] = {}  # origin -> set id (threads share a few origins)
    for lex, origin, q in threads:
        sid = sids.get(origin)
        if sid is None:
            sid = sids[origin] = chart[origin].sid
            if sid < 0:
                return None
        key += (lex, sid, q)
    return array("q", key).tobytes()


def recall(cache: MaskCache, key, row: np.ndarray) -> bool:
    """Write the remembered mask of `key` into row (int32 [words]); False if none."""
    kept = cache.get(key)
    if kept is None:
        return False
    if kept.shape[0] == row.shape[0]:
        np.copyto(row, kept)
    else:  # sparse: the fill word, then the other words' indices, then their values
        half = kept.shape[0] // 2
        row[:] = kept[0]
        row[kept[1:half + 1]] = kept[half + 1:]
    return True


def remember(cache: MaskCache, key, row: np.ndarray) -> None:
    """Keep a read-only copy of row: dense, or the words that differ from all-zero
    (few tokens allowed) or from all-ones (string contents: almost every token).
    Counts first: most rows are dense, and their copy should cost no more than that."""
    words = row.shape[0]
    kept = None
    if np.count_nonzero(row) * SPARSE < words:
        kept = _sparse(row, 0, np.flatnonzero(row))
    elif (words - np.count_nonzero(row == -1)) * SPARSE < words:
        kept = _sparse(row, -1, np.flatnonzero(row != -1))
    if kept is None:
        kept = row.copy()
    kept.flags.writeable = False
    cache.put(key, kept)


def _sparse(row: np.ndarray, fill: int, others: np.ndarray) -> np.ndarray:
    return np.concatenate([np.array([fill], dtype=np.int32), others.astype(np.int32), row[others]])
