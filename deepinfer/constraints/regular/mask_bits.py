"""Allowed-token sets as packed int32 bitmask rows: bit (i % 32) of word i // 32 is token i.

Owns packing token ids into a row (`pack_mask`), setting ids in a row in place (`or_ids`,
through the compiled loop of native/csrc/mask_bits.c where there is one) and the
end-of-sequence bits (`set_eos_bits`). Shared by every mask producer (the
regular back end's masks.py and chains.py, the context-free back end's scans, the JSON
trackers) and the matcher. Knows nothing about automata.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...native import load_library
from ..vocab import Vocabulary


def pack_mask(token_ids: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """int32 [ceil(V/32)] row with bit (i % 32) of word i // 32 set for each id."""
    if token_ids.size * 8 < vocab.size:  # sparse: OR the bits of each word (duplicates ok)
        out = np.zeros(vocab.words, dtype=np.int32)
        or_ids(out, token_ids)
        return out
    bits = np.zeros(vocab.words * 32, dtype=bool)
    bits[token_ids] = True
    return np.packbits(bits, bitorder="little").view("<i4").astype(np.int32, copy=False)


def or_ids(row: np.ndarray, token_ids: np.ndarray, vocab: Vocabulary | None = None) -> None:
    """Set the bits of these ids (duplicates fine) in an int32 row, in place. Why
    ufunc.at: no sort and no temporary row (2-3x faster than packing then OR-ing for
    5-5,000 ids); the compiled loop (native/csrc/mask_bits.c) where there is one: ufunc.at
    spent ~10 us per call before its first id. Given the vocabulary, many ids go through
    pack_mask's dense path."""
    if vocab is not None and token_ids.size * 8 >= vocab.size:
        np.bitwise_or(row, pack_mask(token_ids, vocab), out=row)
    elif token_ids.size:
        kernel = _bits_kernel()
        dtype = token_ids.dtype
        if kernel is not None and (dtype == np.int32 or dtype == np.int64) and row.dtype == np.int32 and \
                row.flags.c_contiguous and token_ids.flags.c_contiguous:
            call = kernel.or_ids32 if dtype == np.int32 else kernel.or_ids64
            if call(row.ctypes.data, row.shape[0], token_ids.ctypes.data, token_ids.size):
                raise IndexError("token id out of the mask row's range")
            return
        ids = token_ids.astype(np.int64, copy=False)
        np.bitwise_or.at(row.view(np.uint32), ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))


_kernel: list = []


def _bits_kernel():
    """The compiled bit setter, or None (no compiler here, DEEPINFER_NATIVE=0)."""
    if not _kernel:
        sig = ([ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64], ctypes.c_int64)
        _kernel.append(load_library("mask_bits", {"or_ids32": sig, "or_ids64": sig}, openmp=False))
    return _kernel[0]


def set_eos_bits(row: np.ndarray, vocab: Vocabulary) -> None:
    """Allow every end-of-sequence id in `row` (in place)."""
    if vocab.eos_word_index.size:
        np.bitwise_or.at(row, vocab.eos_word_index, vocab.eos_word_bits)
