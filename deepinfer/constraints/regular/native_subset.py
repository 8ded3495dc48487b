"""Compiled subset construction (native/csrc/dfa_subset.c) for dfa.determinize, and the table
steps after it (native/csrc/dfa_tables.c) for dfa_minimize.

`subset_table(nfa, classes, limits, budget_s)` returns (int32 [S, C] table over byte
classes, bool [S] accepting) of the raw subset construction, or None when the kernel
cannot be built here (no compiler, DEEPINFER_NATIVE=0): dfa.py then runs its Python
construction. Same states, in discovery order; dfa.py trims, minimizes and renumbers
either one canonically, so both give the same DFA. Why: the Python construction was
most of a lexeme's build (~0.2-3 ms per lexeme inside mask steps, seconds for big
schemas at compile time). Raises ConstraintError (Reason.LIMIT) past the limits, like dfa.py.
`moore_partition` is dfa_minimize's Moore refinement compiled the same way (a lexeme of
tens of states spent ~100 us in numpy rounds). Knows nothing about tokens or grammars.
"""

from __future__ import annotations

import ctypes
from itertools import chain

import numpy as np

from ...native import load_library
from .. import deadline
from ..errors import ConstraintError, Reason

_P = ctypes.c_void_p
_SIGNATURES = {
    "subset_construct": ([ctypes.c_int64] + [_P] * 6 + [ctypes.c_int32] * 3 + [ctypes.c_int64, ctypes.c_double,
                                                                             ctypes.c_double, _P, _P],
                         ctypes.c_int64),
    "subset_free": ([_P], None),
}
_TABLE_SIGNATURES = {
    "moore_blocks": ([ctypes.c_int64, ctypes.c_int32, _P, _P, ctypes.c_int64, _P], ctypes.c_int64),
    "live_states": ([ctypes.c_int64, ctypes.c_int32, _P, _P, _P], ctypes.c_int64),
    "bfs_order": ([ctypes.c_int64, ctypes.c_int32, _P, ctypes.c_int32, _P, _P], ctypes.c_int64),
}
NO_KERNEL = object()
_lib: list = []
_table_lib: list = []


def _library():
    """The subset kernel, or None; `_tables()` is its companion (dfa_tables.c). Tests set `_lib`
    to [None] to run the Python versions of both."""
    if not _lib:
        _lib.append(load_library("dfa_subset", _SIGNATURES, openmp=False))
    return _lib[0]


def _tables():
    if _library() is None:
        return None
    if not _table_lib:
        _table_lib.append(load_library("dfa_tables", _TABLE_SIGNATURES, openmp=False))
    return _table_lib[0]


def subset_table(nfa, classes: np.ndarray, max_states: int, budget_s: float):
    """The subset construction of nfa (nfa.Nfa lists, or native_nfa.NfaTables), or None."""
    if _library() is None:
        return None
    if hasattr(nfa, "eps_start"):  # already CSR (native_nfa.NfaTables)
        return _construct(nfa.states, nfa.eps_start, nfa.eps, nfa.edge_start, nfa.edge_lo, nfa.edge_hi,
                          nfa.edge_to, nfa.start, nfa.accept, classes, max_states, budget_s)
    n = len(nfa.eps)
    eps_start = np.zeros(n + 1, np.int32)
    np.cumsum(list(map(len, nfa.eps)), out=eps_start[1:])
    eps = np.fromiter(chain.from_iterable(nfa.eps), np.int32, int(eps_start[-1]))
    edge_start = np.zeros(n + 1, np.int32)
    np.cumsum(list(map(len, nfa.edges)), out=edge_start[1:])
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(nfa.edges)), np.int32, 3 * int(edge_start[-1]))
    flat = flat.reshape(-1, 3)
    return _construct(n, eps_start, eps, edge_start, flat[:, 0], flat[:, 1], flat[:, 2], nfa.start, nfa.accept,
                      classes, max_states, budget_s)


def _construct(n, eps_start, eps, edge_start, edge_lo, edge_hi, edge_to, start, accept, classes, max_states,
               budget_s):
    lib = _library()
    class_of = classes.astype(np.int32)
    class_lo = np.ascontiguousarray(class_of[edge_lo])
    class_hi = np.ascontiguousarray(class_of[edge_hi])
    edge_to = np.ascontiguousarray(edge_to, dtype=np.int32)
    num_classes = int(classes[-1]) + 1
    table_p, acc_p = ctypes.c_void_p(), ctypes.c_void_p()
    count = lib.subset_construct(n, *(a.ctypes.data for a in (eps_start, eps, edge_start, class_lo, class_hi,
                                                              edge_to)),
                                 start, accept, num_classes, max_states, budget_s, deadline.wall_left(),
                                 ctypes.byref(table_p), ctypes.byref(acc_p))
    if count == -1:
        raise ConstraintError(f"constraint too large: its automaton exceeds {max_states} DFA states", Reason.LIMIT)
    if count == -2:
        deadline.check()  # the compile's wall-clock limit, if that is what stopped it
        raise ConstraintError("constraint too complex: determinization exceeded its time budget "
                              f"({budget_s:.3g} s were left)", Reason.LIMIT)
    if count < 0:
        raise MemoryError("subset construction: out of memory")
    try:
        table = np.ctypeslib.as_array(ctypes.cast(table_p, ctypes.POINTER(ctypes.c_int32)),
                                      (count * num_classes,)).reshape(count, num_classes).copy()
        accepting = np.ctypeslib.as_array(ctypes.cast(acc_p, ctypes.POINTER(ctypes.c_uint8)),
                                          (count,)).astype(bool)
    finally:
        lib.subset_free(table_p)
        lib.subset_free(acc_p)
    return table, accepting


def _table_args(table: np.ndarray, accepting: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    """([states, classes, table address, accepting address], the contiguous int32 table and
    uint8 flags those addresses point into: the caller holds them across the call)."""
    table = np.ascontiguousarray(table, dtype=np.int32)
    acc = np.ascontiguousarray(accepting, dtype=np.uint8)
    return [table.shape[0], table.shape[1], table.ctypes.data, acc.ctypes.data], table, acc


def moore_partition(table: np.ndarray, accepting: np.ndarray, max_rounds: int):
    """int64 [S] block per state of the coarsest stable partition (Moore rounds), None after
    max_rounds rounds, or NO_KERNEL when the kernel cannot be built here."""
    lib = _tables()
    if lib is None:
        return NO_KERNEL
    args, table, acc = _table_args(table, accepting)
    part = np.zeros(table.shape[0], np.int32)
    blocks = lib.moore_blocks(*args, max_rounds, part.ctypes.data)
    if blocks == -3:
        raise MemoryError("Moore refinement: out of memory")
    return None if blocks < 0 else part.astype(np.int64)


def live_states(table: np.ndarray, accepting: np.ndarray):
    """bool [S]: the states that can reach an accepting one, or NO_KERNEL."""
    lib = _tables()
    if lib is None:
        return NO_KERNEL
    args, table, acc = _table_args(table, accepting)
    live = np.zeros(table.shape[0], np.uint8)
    if lib.live_states(*args, live.ctypes.data):
        raise MemoryError("trim: out of memory")
    return live.view(bool)


def bfs_order(table: np.ndarray, start: int):
    """int64 [k]: the states reached from `start`, breadth first, targets in column order; or NO_KERNEL."""
    lib = _tables()
    if lib is None:
        return NO_KERNEL
    table = np.ascontiguousarray(table, dtype=np.int32)
    order = np.zeros(table.shape[0], np.int32)
    seen = np.zeros(table.shape[0], np.uint8)
    count = lib.bfs_order(table.shape[0], table.shape[1], table.ctypes.data, int(start), order.ctypes.data,
                          seen.ctypes.data)
    return order[:count].astype(np.int64)
