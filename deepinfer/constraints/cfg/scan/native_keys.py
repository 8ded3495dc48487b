"""Compiled language keys of DFA states (native/csrc/dfa_keys.c) for the run cache.

`sub_dfa_key(trans, accepting, state, limit)` is scan_tables.small_sub_dfa_key's key
computed in C straight from the transition table, as bytes: the same information (per
state of the renumbered reachable sub-DFA: acceptance, runs of equal targets, their first
bytes and targets), so equal keys exactly for equal sub-DFAs. Why: the Python version
first turns each new lexeme DFA into run tuples (compact_rows) and then walks them, ~100
us per first visit of a state, on every key-trie node and string position.
`forced_literal` is literal_runs.literal_prefix's walk (the bytes a state forces) in C.
`available()` is False when the kernel cannot be built; scan.py and literal_runs.py then keep
the Python versions. Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ....native import load_library

_P = ctypes.c_void_p
_SIGNATURES = {"sub_dfa_key": ([_P, _P, ctypes.c_int32, ctypes.c_int32, _P, _P, _P, ctypes.c_int64],
                               ctypes.c_int64),
               "forced_literal": ([_P, _P, ctypes.c_int32, ctypes.c_int64, _P, _P], ctypes.c_int64)}
MAX_STATES = 4_096   # DFAs scan.py asks keys for (LANGUAGE_DFA)
MAX_LITERAL = 4_096  # bytes forced_literal reads at most (the longest token is far shorter)


class _Scratch:
    def __init__(self, lib, limit: int) -> None:
        self.lib = lib
        self.index = np.full(MAX_STATES, -1, np.int32)   # all -1 between calls (the kernel resets it)
        self.order = np.zeros(MAX_STATES, np.int32)
        self.out = np.zeros(limit * (2 + 2 * 256), np.int32)
        self.args = (self.index.ctypes.data, self.order.ctypes.data, self.out.ctypes.data, len(self.out))
        self.literal = np.zeros(MAX_LITERAL, np.uint8)
        self.end = np.zeros(1, np.int32)
        self.literal_args = (self.literal.ctypes.data, self.end.ctypes.data)
        self.lock = threading.Lock()  # shared scratch, and ctypes releases the GIL


_scratch: dict[int, _Scratch | None] = {}


def available() -> bool:
    return _get(1) is not None


def _get(limit: int) -> _Scratch | None:
    got = _scratch.get(limit, False)
    if got is False:
        lib = load_library("dfa_keys", _SIGNATURES, openmp=False)
        got = _scratch[limit] = None if lib is None else _Scratch(lib, limit)
    return got


def sub_dfa_key(trans: np.ndarray, accepting: np.ndarray, state: int, limit: int) -> bytes | None:
    """The key (bytes) of the sub-DFA reachable from `state`, or None when it has more than
    `limit` states. trans: int32 [S, 256] C-contiguous with S <= MAX_STATES."""
    scratch = _get(limit)
    if trans.dtype != np.int32 or not trans.flags.c_contiguous:
        trans = np.ascontiguousarray(trans, dtype=np.int32)
    acc = np.ascontiguousarray(accepting).view(np.uint8)
    with scratch.lock:
        length = scratch.lib.sub_dfa_key(trans.ctypes.data, acc.ctypes.data, int(state), limit, *scratch.args)
        return None if length < 0 else scratch.out[:length].tobytes()


def forced_literal(trans: np.ndarray, accepting: np.ndarray, state: int, limit: int) -> tuple[bytes, int]:
    """(the bytes forced from `state`, the state after them): read while the state has exactly
    one byte with a move and, after the first byte, is not accepting; at most `limit` bytes.
    literal_runs.literal_prefix's walk in C (31 -> 8 us per cold root run on average, measured
    over 4,952 cold runs of 829 MaskBench lexemes). trans: int32 [S, 256]."""
    scratch = _get(1)
    if trans.dtype != np.int32 or not trans.flags.c_contiguous:
        trans = np.ascontiguousarray(trans, dtype=np.int32)
    acc = np.ascontiguousarray(accepting).view(np.uint8)
    with scratch.lock:
        length = scratch.lib.forced_literal(trans.ctypes.data, acc.ctypes.data, int(state),
                                            min(int(limit), MAX_LITERAL), *scratch.literal_args)
        return scratch.literal[:length].tobytes(), int(scratch.end[0])
