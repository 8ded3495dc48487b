"""Byte NFA -> trimmed, minimized DFA (subset construction over byte classes).

Owns determinization under limits (states, time): byte classes, epsilon
closures, the subset construction, then trimming, Moore minimization and
canonical numbering (breadth first from the start state, so equal languages
give equal tables), which live in dfa_minimize.py (re-exported here). Knows
nothing about tokens.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from .minimize import canonical_order, minimize, trim
from .. import deadline as compile_deadline
from ..errors import ConstraintError, Reason
from .native_nfa import NfaTables, nfa_tables
from .native_subset import subset_table
from .nfa import Nfa, build_nfa


budget_clock = time.thread_time   # the clock every compile-time budget reads


@dataclass
class Limits:
    """Compile-work limits; exceeding one raises a ConstraintError whose reason is Reason.LIMIT (never a hang).

    time_budget_s counts CPU seconds of the compiling thread (`budget_clock`), not wall time: on a
    loaded machine a wall-clock budget made the same schema compile or fail depending on what
    else ran (two MaskBench schemas failed that way at load ~3 on 2 cores)."""

    max_nfa_states: int = 200_000
    max_dfa_states: int = 20_000
    time_budget_s: float = 10.0
    # a whole compile's limits (deadline.py; None: none): wall seconds, and automaton states
    # built in all (a bound on memory); `limit_option` is how the caller raises them
    compile_time_s: float | None = None
    max_compile_states: int | None = None
    limit_option: str = "Limits(compile_time_s=..., max_compile_states=...)"
    # growth of the process's resident memory during one compile, in bytes (deadline.py: sampled,
    # whole-process, so concurrent compiles count each other's); `memory_option` raises it
    max_compile_bytes: int | None = None
    memory_option: str = "Limits(max_compile_bytes=...)"


@dataclass
class Dfa:
    """trans: int32 [S, 256], -1 = dead; accepting: bool [S]; start state is 0."""

    trans: np.ndarray
    accepting: np.ndarray
    digest: str = ""

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])


def byte_classes(nfa: Nfa | NfaTables) -> np.ndarray:
    """uint16 [256]: bytes no NFA edge tells apart share a class id."""
    marks = np.zeros(257, dtype=np.int32)
    if isinstance(nfa, NfaTables):
        marks[nfa.edge_lo] = 1
        marks[nfa.edge_hi + 1] = 1
    else:
        for edges in nfa.edges:
            for lo, hi, _ in edges:
                marks[lo] = 1
                marks[hi + 1] = 1
    marks[0] = 0
    return np.cumsum(marks[:256]).astype(np.uint16)


def determinize_expr(grammar_or_expr, limits: Limits) -> Dfa:
    """determinize(build_nfa(grammar_or_expr, limits.max_nfa_states)), the NFA made by the
    compiled Thompson construction when there is one (native_nfa.py: the same NFA, ~10x faster)."""
    tables = nfa_tables(grammar_or_expr, limits.max_nfa_states)
    if tables is None:
        return determinize(build_nfa(grammar_or_expr, limits.max_nfa_states), limits)
    return determinize(tables, limits)


def determinize(nfa: Nfa | NfaTables, limits: Limits) -> Dfa:
    """Subset construction over the "important" NFA states (those with byte
    edges, and the accept state). State sets are Python int bitsets for small
    NFAs (fast unions) and frozensets of indices for large ones."""
    deadline = budget_clock() + limits.time_budget_s
    classes = byte_classes(nfa)
    native = subset_table(nfa, classes, limits.max_dfa_states, max(0.0, deadline - budget_clock()))
    if native is not None:  # the same construction, compiled (native_subset.py)
        return _finish(native[0], native[1], classes)
    if isinstance(nfa, NfaTables):
        nfa = nfa.to_nfa(nfa.states)
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
        if i % 64 == 0:
            compile_deadline.check()
        if i % 64 == 0 and budget_clock() > deadline:
            raise ConstraintError(f"constraint too complex: determinization exceeded "
                                  f"{limits.time_budget_s:g} s ({len(order)} states)", Reason.LIMIT)
        targets = _successors(order[i], moves) if small else _successors_sets(order[i], moves)
        row = [-1] * num_classes
        for c, key in targets.items():
            j = ids.get(key)
            if j is None:
                if len(order) >= limits.max_dfa_states:
                    raise ConstraintError(f"constraint too large: its automaton exceeds "
                                          f"{limits.max_dfa_states} DFA states", Reason.LIMIT)
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
    return _finish(table, accepting, classes)


def literal_set_dfa(texts: list[bytes]) -> Dfa:
    """The DFA of a finite set of non-empty byte strings (an enum's values), from their trie:
    the same minimal, canonically numbered DFA as determinizing their alternation, without the
    Python NFA (~0.8 ms for three literals, inside the mask step that first reaches them)."""
    nodes: list[dict[int, int]] = [{}]
    ends = set()
    for text in texts:
        at = 0
        for byte in text:
            nxt = nodes[at].get(byte)
            if nxt is None:
                nxt = nodes[at][byte] = len(nodes)
                nodes.append({})
            at = nxt
        ends.add(at)
    table = np.full((len(nodes), 256), -1, dtype=np.int32)
    for state, edges in enumerate(nodes):
        for byte, target in edges.items():
            table[state, byte] = target
    accepting = np.zeros(len(nodes), dtype=bool)
    accepting[list(ends)] = True
    return _finish(table, accepting, np.arange(256))


def _finish(table: np.ndarray, accepting: np.ndarray, classes: np.ndarray) -> Dfa:
    """Trim, minimize and number canonically a subset construction's [S, C] table."""
    compile_deadline.add_states(int(table.shape[0]))  # the compile's state limit counts them all
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
