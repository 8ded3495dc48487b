"""The Thompson construction of nfa.py, compiled (native/csrc/nfa_build.c), as CSR tables.

`nfa_tables(grammar_or_expr, max_states)` serializes the expression (rules inlined) into a
small int32 program, one entry per IR node, bounded repetitions not unrolled, and the
kernel makes the NFA from it: the same states and moves as nfa.build_nfa, in the same
order, returned as the CSR arrays the compiled subset construction reads (NfaTables).
None when the kernel cannot be built here (no compiler, DEEPINFER_NATIVE=0): callers then
build the Python NFA. Why: lexeme DFAs are built inside the mask step that first reaches
them, and half of each build was nfa.py making ~1,200 states one Python call at a time
(MaskBench); a serialized node costs about what one state did, and programs of
rule-free subtrees (the JSON string body, bounded whitespace) are kept process-wide.
Raises ConstraintError as build_nfa does (undefined or recursive rule; too many states, Reason.LIMIT).
Knows nothing about tokens or grammars beyond the IR.
"""

from __future__ import annotations

import ctypes
import threading
from array import array
from dataclasses import dataclass

import numpy as np

from ...native import load_library
from .. import ir
from ..errors import ConstraintError, Reason
from .nfa import Nfa, dfa_runs, inlined_rule, utf8_sequences

_P = ctypes.c_void_p
_SIGNATURES = {
    "nfa_build": ([_P, ctypes.c_int64, ctypes.c_int64, _P, _P], ctypes.c_int64),
    "nfa_free": ([_P], None),
}
_LIT, _CLASS, _SEQ, _ALT, _REP, _DFA = 1, 2, 3, 4, 5, 6
MAX_KEPT_WORDS = 4_000_000  # int32 words of kept programs (16 MB); then emptied
_lib: list = []
_kept: dict = {}            # expr without rule references -> its program (bytes)
_kept_words = [0]
_lock = threading.Lock()


@dataclass
class NfaTables:
    """A byte NFA as CSR arrays (int32): per state, epsilon targets and (lo, hi, target) edges."""

    states: int
    start: int
    accept: int
    eps_start: np.ndarray   # [states + 1]
    eps: np.ndarray         # [eps moves]
    edge_start: np.ndarray  # [states + 1]
    edge_lo: np.ndarray     # [edges] first byte
    edge_hi: np.ndarray     # [edges] last byte
    edge_to: np.ndarray     # [edges] target state

    def to_nfa(self, max_states: int) -> Nfa:
        """The same NFA as nfa.Nfa lists (for the Python subset construction and tests)."""
        eps, lo, hi, to = (a.tolist() for a in (self.eps, self.edge_lo, self.edge_hi, self.edge_to))
        es, gs = self.eps_start.tolist(), self.edge_start.tolist()
        nfa = Nfa(max_states, start=self.start, accept=self.accept)
        nfa.eps = [eps[es[s]:es[s + 1]] for s in range(self.states)]
        nfa.edges = [list(zip(lo[gs[s]:gs[s + 1]], hi[gs[s]:gs[s + 1]], to[gs[s]:gs[s + 1]]))
                     for s in range(self.states)]
        return nfa


def _library():
    if not _lib:
        _lib.append(load_library("nfa_build", _SIGNATURES, openmp=False))
    return _lib[0]


def nfa_tables(grammar_or_expr, max_states: int = 200_000) -> NfaTables | None:
    """The NFA of a non-recursive grammar (rules inlined) or of one expression, or None
    when the kernel cannot be built here (or the expression nests deeper than Python's
    recursion limit allows the writer: nfa.build_nfa then builds it as before)."""
    lib = _library()
    if lib is None:
        return None
    if isinstance(grammar_or_expr, ir.Grammar):
        rules, expr = grammar_or_expr.rules, ir.RuleRef(grammar_or_expr.start)
    else:
        rules, expr = {}, grammar_or_expr
    try:
        words = np.frombuffer(_Writer(rules).program(expr), dtype=np.int32)
    except RecursionError:  # ~3 frames per IR level here, 1 in nfa.py: let it build the deep ones
        return None
    out = (ctypes.c_void_p * 6)()
    ends = np.zeros(2, np.int32)
    count = lib.nfa_build(words.ctypes.data, len(words), max_states, out, ends.ctypes.data)
    if count == -1:
        raise ConstraintError(f"constraint too large: its automaton exceeds {max_states} "
                              "NFA states (large bounded repetition or alternation?)", Reason.LIMIT)
    if count == -3:
        raise MemoryError("NFA construction: out of memory")
    if count < 0:
        raise AssertionError(f"nfa_build rejected its program ({count})")
    try:
        eps_start, edge_start = _copy(out[0], count + 1), _copy(out[2], count + 1)
        eps = _copy(out[1], int(eps_start[-1]))
        lo, hi, to = (_copy(out[k], int(edge_start[-1])) for k in (3, 4, 5))
    finally:
        for pointer in out:
            lib.nfa_free(pointer)
    return NfaTables(int(count), int(ends[0]), int(ends[1]), eps_start, eps, edge_start, lo, hi, to)


def _copy(pointer, count: int) -> np.ndarray:
    if count == 0:
        return np.zeros(0, np.int32)
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_int32)), (count,)).copy()


class _Writer:
    """Serializes expressions; rule bodies are inlined (and written once per writer)."""

    def __init__(self, rules: dict[str, ir.Expr]) -> None:
        self.rules = rules
        self.inlining: list[str] = []
        self.local: dict[ir.Expr, bytes] = {}  # expressions that reference rules

    def program(self, expr: ir.Expr) -> bytes:
        plain = not ir.rule_refs(expr)
        got = _kept.get(expr) if plain else self.local.get(expr)
        if got is not None:
            return got
        got = self._write(expr)
        if not plain:
            self.local[expr] = got
        elif not isinstance(expr, ir.Literal):  # literals are cheaper to write than to look up
            _keep(expr, got)
        return got

    def _write(self, expr: ir.Expr) -> bytes:
        match expr:
            case ir.Literal(text):
                data = text.encode("utf-8")
                return _words([_LIT, len(data), *data])
            case ir.CharClass():
                words = [_CLASS, 0]
                for lo, hi in expr.ranges:
                    for ranges in utf8_sequences(lo, hi):
                        words.append(len(ranges))
                        for pair in ranges:
                            words.extend(pair)
                        words[1] += 1
                return _words(words)
            case ir.Seq(items) | ir.Alt(items):
                head = _words([_SEQ if isinstance(expr, ir.Seq) else _ALT, len(items)])
                return head + b"".join(self.program(item) for item in items)
            case ir.Repeat(item, lo, hi):
                return _words([_REP, lo, -1 if hi is None else hi]) + self.program(item)
            case ir.ByteDfa():
                return _dfa_words(expr)
            case ir.RuleRef(name):
                with inlined_rule(self.rules, self.inlining, name) as body:
                    return self.program(body)
        raise TypeError(f"not an IR expression: {expr!r}")


def _words(values) -> bytes:
    return array("i", values).tobytes()


def _dfa_words(dfa: ir.ByteDfa) -> bytes:
    """A leaf's states, its rows as runs of equal targets (nfa.dfa_runs, as nfa.byte_dfa makes
    its edges), its accepting states."""
    runs = dfa_runs(dfa.trans).astype(np.int32)
    accepting = np.flatnonzero(np.asarray(dfa.accepting)).astype(np.int32)
    return b"".join([_words([_DFA, dfa.num_states, len(runs)]), runs.tobytes(),
                     _words([len(accepting)]), accepting.tobytes()])


def _keep(expr: ir.Expr, program: bytes) -> None:
    words = len(program) // 4
    if words * 8 > MAX_KEPT_WORDS:
        return  # one-off giants would flush the shared pieces
    with _lock:
        if _kept_words[0] + words > MAX_KEPT_WORDS:
            _kept.clear()
            _kept_words[0] = 0
        if expr not in _kept:
            _kept[expr] = program
            _kept_words[0] += words
