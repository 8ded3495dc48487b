"""The end of a vectorized walk, in Python, once only a few tokens are left.

scan_walks.py walks tokens one byte position per numpy
step; a step costs ~5-20 us whatever its size. After the bulk of a group dies
or finishes, a handful of long tokens (runs of 32-128 spaces, long runs of
multi-byte characters) kept up to ~120 more steps going: ~1 ms of a bounded-
string root run for a dozen entries. Here they are read byte by byte instead.

Exact: the same rules as scan_walks.walk_uniform (a token is inside if
its last byte leaves the DFA alive; it crosses a boundary at k if the state
after k bytes accepts and byte k may follow the lexeme). Knows nothing about
parsing.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

FEW_TOKENS = 128  # walks of this few tokens finish here (48 -> 128: 4% fewer slow steps; 256: worse)


def finish_few(tokens: list, flat: np.ndarray, accepting: np.ndarray, follow: np.ndarray,
               idx: np.ndarray, j: int, cur: np.ndarray, inside: list, hit_idx: list,
               hit_off: list) -> None:
    """Walk the tokens at sorted positions idx (bytes `tokens[p]`), all at offset j in
    states cur, through the flat DFA table; append to inside / hit_idx / hit_off."""
    _walk_entries(tokens, flat, accepting, follow, zip(idx.tolist(), repeat(j), cur.tolist()),
                  inside, hit_idx, hit_off)


def walk_scope(tokens: list, flat: np.ndarray, accepting: np.ndarray, follow: np.ndarray,
               positions: list, offsets: list, state: int, inside: list, hit_idx: list,
               hit_off: list) -> None:
    """The same for a small scope: entries (token at sorted position positions[i], bytes
    already read offsets[i]) all read from `state`. Why: most child scopes hold 1-10
    entries, and the vectorized walk costs ~20-40 us of numpy set-up per scope."""
    _walk_entries(tokens, flat, accepting, follow, zip(positions, offsets, repeat(state)),
                  inside, hit_idx, hit_off)


def _walk_entries(tokens: list, flat: np.ndarray, accepting: np.ndarray, follow: np.ndarray,
                  entries, inside: list, hit_idx: list, hit_off: list) -> None:
    """Walk entries (sorted position p, bytes already read j, DFA state q) byte by byte."""
    done, hits, offs = [], [], []
    step, accepts, follows = flat.item, accepting.item, follow.item  # plain ints/bools: no numpy scalars
    for p, j, q in entries:
        data = tokens[p]
        end = len(data)
        for k in range(j, end):
            q = step(q * 256 + data[k])
            if q < 0:
                break
            if k + 1 == end:
                done.append(p)
            elif accepts(q) and follows(data[k + 1]):
                hits.append(p)
                offs.append(k + 1)
    if done:
        inside.append(np.array(done, dtype=np.int64))
    if hits:
        hit_idx.append(np.array(hits, dtype=np.int64))
        hit_off.append(np.array(offs, dtype=np.int64))
