"""Compiled walks of the token trie for ScanCache runs (native/csrc/token_trie.c).

The numpy walks (scan_walks.py, few_walks.py, tails.py) take one vectorized step per byte
position over every candidate token; a cold run pays that for each new DFA state (a key-trie
node, a child scope after a boundary), 0.1-2 ms each in Python. The compiled walk visits the
vocabulary's trie once, skipping a dead prefix's whole subtree, and a subtree whose bytes all
loop on their state (a string body) in one step: microseconds for a key-trie node. Same
results, same exactness argument as the numpy walks: `inside` = the token's remaining bytes are
all read with the DFA live; a crossing = the DFA accepts with bytes left and the next byte may
follow the lexeme.

`TokenTrie.of(scans)` is None when the kernel cannot be built (no compiler, DEEPINFER_NATIVE=0):
callers keep the numpy walks. Owns the trie arrays of one vocabulary; knows nothing about
parsing, run keys or caching.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ....native import load_library

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_SIGNATURES = {
    "trie_build": ([_I64, _P, _P, _P, _P, _I64, _P, _P, _P, _P, _P, _P, _P, _P], _I64),
    "trie_walk": ([_I64] + [_P] * 13 + [ctypes.c_int32] + [_P] * 5 + [_I64], _I64),
    "entries_walk": ([_P, _P, _P, _I64, _P, _P, _P, _P, _P, ctypes.c_int32, _P, _P, _P, _P, _I64], _I64),
}
_MISSING = object()


def _address(array: np.ndarray) -> int:
    return array.ctypes.data


class TokenTrie:
    """The sorted vocabulary of a ScanCache as a trie (built once per vocabulary)."""

    @staticmethod
    def of(scans) -> TokenTrie | None:
        got = scans.__dict__.get("_token_trie", _MISSING)
        if got is _MISSING:
            lib = load_library("token_trie", _SIGNATURES, openmp=False)
            got = scans.__dict__["_token_trie"] = None if lib is None else TokenTrie(lib, scans.vocab)
        return got

    def __init__(self, lib, vocab) -> None:
        self.lib = lib
        lengths = vocab.sorted_lengths.astype(np.int64)
        n = len(lengths)
        self.n = n
        self.lengths = np.ascontiguousarray(lengths)
        self.starts = np.zeros(n, np.int64)
        np.cumsum(lengths[:-1], out=self.starts[1:])
        cols = vocab.sorted_bytes_T                                       # [width, n]
        width = cols.shape[0]
        inside = np.arange(width)[:, None] < lengths[None, :]             # [width, n]
        self.bytes = np.ascontiguousarray(cols.T[inside.T])               # uint8, token after token
        self.lcp = np.ascontiguousarray(_lcp(cols, lengths))
        cap = int((lengths - self.lcp).sum())
        self.byte = np.zeros(cap, np.uint8)
        self.depth, self.end, self.lo, self.hi, self.here = (np.zeros(cap, np.int32) for _ in range(5))
        self.sig = np.zeros(2 * cap, np.uint64)
        self.wide = np.zeros(cap, np.uint8)
        count = lib.trie_build(n, _address(self.bytes), _address(self.starts), _address(self.lengths),
                               _address(self.lcp), cap, *(_address(a) for a in (
                                   self.byte, self.depth, self.end, self.lo, self.hi, self.here,
                                   self.sig, self.wide)))
        if count < 0:
            raise RuntimeError("token trie: vocabulary too deep for the kernel")
        self.nodes = int(count)
        self._node_args = [self.nodes] + [_address(a) for a in (
            self.byte, self.depth, self.end, self.lo, self.hi, self.here, self.sig, self.wide)]
        self._count = np.zeros(1, np.int64)
        self._lock = threading.Lock()  # the output buffers are shared, and ctypes releases the GIL
        self._buffers(n, 4096)
        self._bytes_args = [_address(self.bytes), _address(self.starts), _address(self.lengths)]

    def _buffers(self, inside: int, hits: int) -> None:
        """(Re)allocate the output buffers and keep their addresses (a `.ctypes` lookup costs
        ~1 us; a cold run makes one call)."""
        self._inside = np.zeros(inside, np.int32)
        self._hit_pos = np.zeros(hits, np.int32)
        self._hit_off = np.zeros(hits, np.int32)
        self._out_args = [_address(self._inside), _address(self._count), _address(self._hit_pos),
                          _address(self._hit_off)]

    def walk(self, trans: np.ndarray, accepting: np.ndarray, follow: np.ndarray, state: int,
             first_ok: np.ndarray, loops: tuple[np.ndarray, np.ndarray] | None = None):
        """(inside positions, crossing positions, crossing offsets), all int64, for the whole
        vocabulary read from `state`, first bytes limited to bool [256] `first_ok`. `loops`:
        scan_walks.loop_table's (uint64 [S, 2], bool [S]) for the subtree shortcut."""
        trans, acc, fol, first = _tables(trans, accepting, follow, first_ok)
        bits, ok = (0, 0) if loops is None else (_address(loops[0]), _address(loops[1].view(np.uint8)))
        keep = (trans, acc, fol, first, loops)  # noqa: F841  (alive across the call)
        return self._retry(lambda cap: self.lib.trie_walk(
            *self._node_args, _address(trans), _address(acc), _address(fol), bits, ok, int(state),
            _address(first), *self._out_args, cap))

    def walk_entries(self, trans: np.ndarray, accepting: np.ndarray, follow: np.ndarray, state: int,
                     positions: np.ndarray, offsets: np.ndarray):
        """The same for entries (sorted position, bytes already read), each walked alone."""
        trans, acc, fol, _ = _tables(trans, accepting, follow, None)
        pos = np.ascontiguousarray(positions, dtype=np.int64)
        off = np.ascontiguousarray(offsets, dtype=np.int64)
        keep = (trans, acc, fol, pos, off)  # noqa: F841
        return self._retry(lambda cap: self.lib.entries_walk(
            *self._bytes_args, len(pos), _address(pos), _address(off), _address(trans), _address(acc),
            _address(fol), int(state), *self._out_args, cap), len(pos))

    def _retry(self, call, inside: int = 0):
        """Run `call(hit capacity)` on the shared output buffers (one walk at a time)."""
        with self._lock:
            if inside > len(self._inside):
                self._buffers(inside, len(self._hit_pos))
            return self._call(call)

    def _call(self, call):
        hits = call(len(self._hit_pos))
        if hits > len(self._hit_pos):  # the crossings did not fit: grow and walk again
            self._buffers(len(self._inside), 2 * hits)
            hits = call(len(self._hit_pos))
        count = int(self._count[0])
        return (self._inside[:count].astype(np.int64), self._hit_pos[:hits].astype(np.int64),
                self._hit_off[:hits].astype(np.int64))


def _tables(trans, accepting, follow, first_ok):
    trans = trans if trans.dtype == np.int32 and trans.flags.c_contiguous else np.ascontiguousarray(
        trans, dtype=np.int32)
    return (trans, _bytes(accepting), _bytes(follow), None if first_ok is None else _bytes(first_ok))


def _bytes(flags: np.ndarray) -> np.ndarray:
    """A bool array as contiguous uint8 (a view when it already is)."""
    flags = np.ascontiguousarray(flags)
    return flags.view(np.uint8) if flags.dtype == np.bool_ else flags.astype(np.uint8)


def _lcp(cols: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """int64 [n]: bytes token p shares with token p-1 (0 for the first)."""
    n = len(lengths)
    out = np.zeros(n, np.int64)
    if n < 2:
        return out
    differ = cols[:, 1:] != cols[:, :-1]                                # [width, n-1]
    first = np.where(differ.any(axis=0), differ.argmax(axis=0), cols.shape[0])
    out[1:] = np.minimum(first, np.minimum(lengths[1:], lengths[:-1]))
    return out
