"""mask_bits.or_ids sets exactly the bits of the given ids (int32 or int64, duplicates, any order),
the same with the compiled loop (native/csrc/mask_bits.c) as with numpy's, and refuses an id
outside the row instead of writing past it."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints.regular import mask_bits


def _expected(words: int, ids) -> np.ndarray:
    bits = np.zeros(words * 32, dtype=bool)
    bits[np.asarray(ids, dtype=np.int64)] = True
    return np.packbits(bits, bitorder="little").view("<i4")


@pytest.mark.parametrize("kernel", ["native", "numpy"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("ids", [[0], [31, 32, 33], [5, 5, 5, 1000, 4095], list(range(0, 4096, 7)), [4095, 0, 31]])
def test_or_ids_sets_exactly_those_bits(kernel, dtype, ids, monkeypatch):
    if kernel == "numpy":
        monkeypatch.setattr(mask_bits, "_kernel", [None])
    elif mask_bits._bits_kernel() is None:
        pytest.skip("no C compiler here")
    row = np.zeros(128, dtype=np.int32)
    row[3] = 1 << 4  # bits already set stay set
    mask_bits.or_ids(row, np.array(ids, dtype=dtype))
    want = _expected(128, ids)
    want[3] |= 1 << 4
    assert np.array_equal(row, want)


def test_or_ids_of_a_strided_view_and_nothing():
    row = np.zeros(8, dtype=np.int32)
    mask_bits.or_ids(row, np.arange(0, 256, 3, dtype=np.int64)[::2])
    assert np.array_equal(row, _expected(8, np.arange(0, 256, 6)))
    mask_bits.or_ids(row, np.zeros(0, dtype=np.int32))
    assert np.array_equal(row, _expected(8, np.arange(0, 256, 6)))


@pytest.mark.parametrize("bad", [256, -1])
def test_an_id_outside_the_row_is_refused(bad):
    if mask_bits._bits_kernel() is None:
        pytest.skip("no C compiler here")
    row = np.zeros(8, dtype=np.int32)
    with pytest.raises(IndexError):
        mask_bits.or_ids(row, np.array([3, bad], dtype=np.int32))
    assert not row.any()
