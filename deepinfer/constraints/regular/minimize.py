"""Trimming, Moore minimization and canonical numbering of a DFA table.

Owns the table-level clean-up after a subset construction (dfa.py) or a
product (dfa_ops.py): `trim` (states that cannot reach acceptance are
removed, so every live transition can still lead to a complete match),
`minimize` (vectorized Moore refinement, hashed rounds checked exactly) and
`canonical_order` (breadth first from the start state, so equal languages
give equal tables). Works on int32 [S, C] tables over any columns (byte
classes or bytes); knows nothing about NFAs, determinization limits or
tokens.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConstraintError, Reason
from .native_subset import NO_KERNEL, bfs_order, live_states, moore_partition


def trim(table: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop states that cannot reach an accepting state; raise if nothing is left."""
    live = live_states(table, accepting)  # compiled (native_subset.py), else the search below
    if live is NO_KERNEL:
        live = _live_states(table, accepting)
    if not live[0]:
        raise ConstraintError("the constraint matches no string (empty language)", Reason.EMPTY)
    renum = np.full(table.shape[0] + 1, -1, dtype=np.int32)  # index -1 -> last slot -> -1
    renum[:-1][live] = np.arange(int(live.sum()), dtype=np.int32)
    new = renum[table[live]]
    return new, accepting[live]


def _live_states(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    src, _ = np.nonzero(table >= 0)
    dst = table[table >= 0]
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    bounds = np.searchsorted(dst, np.arange(table.shape[0] + 1))
    live = accepting.copy()
    stack = list(np.flatnonzero(accepting))
    while stack:
        t = stack.pop()
        for s in src[bounds[t]:bounds[t + 1]]:
            if not live[s]:
                live[s] = True
                stack.append(int(s))
    return live


MAX_MOORE_ROUNDS = 64


def minimize(table: np.ndarray, accepting: np.ndarray):
    """Moore partition refinement (vectorized over states and classes).

    Returns (table, accepting, start) where start is the block of old state 0.
    Moore needs as many rounds as the longest distinguishing suffix; long chains
    (`a{2000}`) would take seconds, so after MAX_MOORE_ROUNDS the DFA is kept
    as it is (correct, only not minimal; subset construction of such chains is
    minimal already).
    """
    part = moore_partition(table, accepting, MAX_MOORE_ROUNDS)  # compiled, exact (native_subset.py)
    hashed = part is NO_KERNEL
    if hashed:
        part = _moore(table, accepting, _hashed_round)
    if part is None:
        return table, accepting, 0
    if hashed and not _stable(table, accepting, part):  # a hash collision merged distinguishable
        part = _moore(table, accepting, _exact_round)  # states: redo exactly
        if part is None:
            return table, accepting, 0
    blocks = int(part.max()) + 1
    reps = np.zeros(blocks, dtype=np.int64)
    reps[part[::-1]] = np.arange(len(part))[::-1]  # first state of each block
    new_table = np.where(table[reps] >= 0, part[np.maximum(table[reps], 0)], -1)
    return new_table.astype(np.int32), accepting[reps], int(part[0])


def _moore(table: np.ndarray, accepting: np.ndarray, refine) -> np.ndarray | None:
    """Moore rounds until the block count is stable; None after MAX_MOORE_ROUNDS."""
    part = accepting.astype(np.int64)
    blocks = len(np.unique(part))
    for _ in range(MAX_MOORE_ROUNDS):
        target_part = np.where(table >= 0, part[np.maximum(table, 0)], -1)   # [S, C]
        part = refine(part, target_part)
        count = int(part.max()) + 1
        if count == blocks:
            return part
        blocks = count
    return None


_WEIGHTS = np.random.default_rng(0x5EED).integers(1, 2**62, size=257, dtype=np.int64) | 1


def _hashed_round(part: np.ndarray, target_part: np.ndarray) -> np.ndarray:
    """Blocks by a 64-bit hash of (block, target blocks): one int64 sort instead of
    a sort of wide byte rows (~50x faster; Moore needs one round per state of a
    chain such as bounded whitespace). Collisions are caught by _stable."""
    cols = target_part.shape[1]
    with np.errstate(over="ignore"):
        h = (target_part + 1) @ _WEIGHTS[1:cols + 1] if cols <= 256 else _wide_hash(target_part)
        h = h + (part + 1) * _WEIGHTS[0]
    return np.unique(h, return_inverse=True)[1].reshape(-1)


def _wide_hash(target_part: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(target_part)
    void = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    return np.unique(void, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _exact_round(part: np.ndarray, target_part: np.ndarray) -> np.ndarray:
    sig = np.ascontiguousarray(np.column_stack([part, target_part]))
    rows = sig.view(np.dtype((np.void, sig.dtype.itemsize * sig.shape[1]))).reshape(-1)
    return np.unique(rows, return_inverse=True)[1].reshape(-1)


def _stable(table: np.ndarray, accepting: np.ndarray, part: np.ndarray) -> bool:
    """Every block agrees on acceptance and on the blocks each class leads to, so
    merging each block is language-preserving (a bisimulation)."""
    reps = np.zeros(int(part.max()) + 1, dtype=np.int64)
    reps[part[::-1]] = np.arange(len(part))[::-1]
    rep = reps[part]
    target_part = np.where(table >= 0, part[np.maximum(table, 0)], -1)
    return bool((accepting == accepting[rep]).all() and (target_part == target_part[rep]).all())


def canonical_order(table: np.ndarray, accepting: np.ndarray, start: int | None = None):
    """Renumber breadth first from `start`, so the start state becomes 0."""
    n = table.shape[0]
    start = 0 if start is None else start
    order = bfs_order(table, start)  # compiled (native_subset.py), else the loop below
    if order is not NO_KERNEL:
        renum = np.full(n + 1, -1, dtype=np.int32)
        renum[order] = np.arange(len(order), dtype=np.int32)
        return renum[table[order]], accepting[order]
    order = [start]
    seen = np.zeros(n, dtype=bool)
    seen[start] = True
    i = 0
    rows = table.tolist()  # plain ints: iterating numpy scalars was most of this function
    seen = seen.tolist()
    while i < len(order):
        for t in rows[order[i]]:
            if t >= 0 and not seen[t]:
                seen[t] = True
                order.append(t)
        i += 1
    renum = np.full(n + 1, -1, dtype=np.int32)
    renum[np.array(order)] = np.arange(len(order), dtype=np.int32)
    return renum[table[order]], accepting[order]
