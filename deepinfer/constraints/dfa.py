"""Byte NFA -> trimmed, minimized DFA (subset construction over byte classes).

Owns determinization under limits (states, time), trimming (states that
cannot reach acceptance are removed, so every live transition can still lead
to a complete match), Moore minimization and canonical numbering (breadth
first from the start state, so equal languages give equal tables). Knows
nothing about tokens.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from .errors import ConstraintError
from .nfa import Nfa


budget_clock = time.thread_time   # the clock every compile-time budget reads


@dataclass
class Limits:
    """Compile-work limits; exceeding one raises ConstraintError (never a hang).

    time_budget_s counts CPU seconds of the compiling thread (`budget_clock`), not wall time: on a
    loaded machine a wall-clock budget made the same schema compile or fail depending on what
    else ran (two MaskBench schemas failed that way at load ~3 on 2 cores)."""

    max_nfa_states: int = 200_000
    max_dfa_states: int = 20_000
    time_budget_s: float = 10.0


@dataclass
class Dfa:
    """trans: int32 [S, 256], -1 = dead; accepting: bool [S]; start state is 0."""

    trans: np.ndarray
    accepting: np.ndarray
    digest: str = ""

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])


def byte_classes(nfa: Nfa) -> np.ndarray:
    """uint16 [256]: bytes no NFA edge tells apart share a class id."""
    marks = np.zeros(257, dtype=np.int32)
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            marks[lo] = 1
            marks[hi + 1] = 1
    marks[0] = 0
    return np.cumsum(marks[:256]).astype(np.uint16)


def determinize(nfa: Nfa, limits: Limits) -> Dfa:
    """Subset construction over the "important" NFA states (those with byte
    edges, and the accept state). State sets are Python int bitsets for small
    NFAs (fast unions) and frozensets of indices for large ones."""
    deadline = budget_clock() + limits.time_budget_s
    classes = byte_classes(nfa)
    num_classes = int(classes[-1]) + 1
    important = [s for s in range(len(nfa.edges)) if nfa.edges[s] or s == nfa.accept]
    bit_of = {s: i for i, s in enumerate(important)}
    closures: dict[int, int] = {}

    small = len(important) <= 4096
    empty = 0 if small else frozenset()
    if small:
        closures = _all_closures(nfa, bit_of)

    def closure(state: int):
        got = closures.get(state)
        if got is None:
            seen, stack, members = {state}, [state], []
            while stack:
                s = stack.pop()
                i = bit_of.get(s)
                if i is not None:
                    members.append(i)
                for t in nfa.eps[s]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            got = closures[state] = (sum(1 << i for i in members) if small else frozenset(members))
        return got

    moves = _Moves(nfa.edges, important, classes, closure, empty)
    accept_index = bit_of[nfa.accept]
    start = closure(nfa.start)
    ids = {start: 0}
    order = [start]
    rows: list[list[int]] = []
    i = 0
    while i < len(order):
        if i % 64 == 0 and budget_clock() > deadline:
            raise ConstraintError(f"constraint too complex: determinization exceeded "
                                  f"{limits.time_budget_s:g} s ({len(order)} states)")
        targets = _successors(order[i], moves) if small else _successors_sets(order[i], moves)
        row = [-1] * num_classes
        for c, key in targets.items():
            j = ids.get(key)
            if j is None:
                if len(order) >= limits.max_dfa_states:
                    raise ConstraintError(f"constraint too large: its automaton exceeds "
                                          f"{limits.max_dfa_states} DFA states")
                j = ids[key] = len(order)
                order.append(key)
            row[c] = j
        rows.append(row)
        i += 1
    table = np.array(rows, dtype=np.int32).reshape(len(rows), num_classes)
    if small:
        accepting = np.array([bool(key >> accept_index & 1) for key in order], dtype=bool)
    else:
        accepting = np.array([accept_index in key for key in order], dtype=bool)
    table, accepting = trim(table, accepting)
    table, accepting, start_block = minimize(table, accepting)
    table, accepting = canonical_order(table, accepting, start_block)
    full = table[:, classes.astype(np.int64)]  # [S, 256]
    digest = hashlib.blake2b(full.tobytes() + accepting.tobytes(), digest_size=16).hexdigest()
    return Dfa(np.ascontiguousarray(full, dtype=np.int32), accepting, digest)


class _Moves(list):
    """Per important state (lazily): class -> closed set of the states its edges reach.

    A module-level class, not one defined per determinize call: a class object is a
    reference cycle, so a local one kept the whole NFA alive until the next garbage
    collection (most of the cyclic garbage a compile left behind)."""

    def __init__(self, edges, important: list[int], classes: np.ndarray, closure, empty) -> None:
        super().__init__([None] * len(important))
        self.edges, self.important, self.closure, self.empty = edges, important, closure, empty
        self.classes = classes.tolist()  # plain ints (int() of numpy scalars per edge before)

    def _missing(self, i: int) -> dict:
        out: dict = {}
        classes, closure, empty = self.classes, self.closure, self.empty
        for lo, hi, target in self.edges[self.important[i]]:
            cl = closure(target)
            for c in range(classes[lo], classes[hi] + 1):
                out[c] = out.get(c, empty) | cl
        self[i] = out
        return out

    def __getitem__(self, i):
        got = list.__getitem__(self, i)
        return self._missing(i) if got is None else got


def _all_closures(nfa: Nfa, bit_of: dict[int, int]) -> dict[int, int]:
    """Epsilon closure of every NFA state as a bitset over important states, in one pass.

    Tarjan's SCC algorithm (iterative) over epsilon edges: a component's closure is its
    members' own bits plus the closures of the components it reaches, finished in reverse
    topological order. Why: Thompson NFAs share long epsilon paths (alternation exits,
    repetition loops), so a search per state redid the same walks (~40% of determinize)."""
    eps = nfa.eps
    n = len(eps)
    index = [0] * n          # 0: unvisited, else DFS number + 1
    low = [0] * n
    on_stack = [False] * n
    comp_of = [-1] * n
    comp_bits: list[int] = []
    stack: list[int] = []
    counter = 0
    for root in range(n):
        if index[root]:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                counter += 1
                index[v] = low[v] = counter
                stack.append(v)
                on_stack[v] = True
            targets = eps[v]
            while k < len(targets):
                w = targets[k]
                k += 1
                if not index[w]:
                    work.append((v, k))
                    work.append((w, 0))
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                if low[v] == index[v]:  # v roots a component: its successors are finished
                    members = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp_of[w] = len(comp_bits)
                        members.append(w)
                        if w == v:
                            break
                    bits = 0
                    for w in members:
                        i = bit_of.get(w)
                        if i is not None:
                            bits |= 1 << i
                        for t in eps[w]:
                            c = comp_of[t]
                            if c != len(comp_bits):  # another (finished) component
                                bits |= comp_bits[c]
                    comp_bits.append(bits)
                if work:  # propagate low to the parent frame
                    parent = work[-1][0]
                    if low[v] < low[parent]:
                        low[parent] = low[v]
    return {s: comp_bits[comp_of[s]] for s in range(n)}


def _successors(bits: int, moves: list[dict]) -> dict[int, int]:
    targets: dict[int, int] = {}
    while bits:
        low = bits & -bits
        for c, cl in moves[low.bit_length() - 1].items():
            targets[c] = targets.get(c, 0) | cl
        bits ^= low
    return targets


def _successors_sets(members: frozenset, moves: list[dict]) -> dict[int, frozenset]:
    acc: dict[int, set] = {}
    for i in members:
        for c, cl in moves[i].items():
            acc.setdefault(c, set()).update(cl)
    return {c: frozenset(v) for c, v in acc.items()}


def trim(table: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop states that cannot reach an accepting state; raise if nothing is left."""
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
    if not live[0]:
        raise ConstraintError("the constraint matches no string (empty language)")
    renum = np.full(table.shape[0] + 1, -1, dtype=np.int32)  # index -1 -> last slot -> -1
    renum[:-1][live] = np.arange(int(live.sum()), dtype=np.int32)
    new = renum[table[live]]
    return new, accepting[live]


MAX_MOORE_ROUNDS = 64


def minimize(table: np.ndarray, accepting: np.ndarray):
    """Moore partition refinement (vectorized over states and classes).

    Returns (table, accepting, start) where start is the block of old state 0.
    Moore needs as many rounds as the longest distinguishing suffix; long chains
    (`a{2000}`) would take seconds, so after MAX_MOORE_ROUNDS the DFA is kept
    as it is (correct, only not minimal; subset construction of such chains is
    minimal already).
    """
    part = _moore(table, accepting, _hashed_round)
    if part is None:
        return table, accepting, 0
    if not _stable(table, accepting, part):  # a hash collision merged distinguishable
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
