"""GGUF block formats read as (unsigned values, scales, mins) and packed for the kernel, exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deepinfer.model.quant import FORMATS, QuantWeight, pack_fused
from deepinfer.model.quant.formats import concat_rows, quantize_asymmetric4, quantize_symmetric8, unpack_rows
from quant_blocks import ALL_FORMATS, random_blocks, reference_dequantize


@pytest.mark.parametrize("name", ALL_FORMATS)
def test_unpacked_values_dequantize_exactly_as_gguf_py(name):
    fmt, rng = FORMATS[name], np.random.default_rng(len(name))
    data = random_blocks(fmt, 24, 512, rng)
    unpacked = unpack_rows(fmt, data, 24, 512)
    assert unpacked.values.max() < 2 ** fmt.bits
    # float32 products of fp16 scales and small integers are exact: bit-identical values
    np.testing.assert_array_equal(unpacked.dequantize(), reference_dequantize(fmt, data, 24, 512).astype(np.float32))


@pytest.mark.parametrize("name", ALL_FORMATS)
def test_packed_layout_keeps_every_value(name):
    fmt, rng = FORMATS[name], np.random.default_rng(7)
    rows = 37                                            # not a multiple of the 16-row panels
    unpacked = unpack_rows(fmt, random_blocks(fmt, rows, 256, rng), rows, 256)
    packed = QuantWeight.pack(unpacked)
    assert packed.data.shape == (3, 256 // 32, 64 * fmt.bits)
    np.testing.assert_array_equal(packed.dequantize().numpy(), unpacked.dequantize())
    ids = torch.tensor([36, 0, 17, 17, 5])
    np.testing.assert_array_equal(packed.dequantize_rows(ids).numpy(), unpacked.dequantize()[ids.numpy()])


@pytest.mark.parametrize("name", ALL_FORMATS)
def test_packed_bytes_stay_within_a_third_above_the_files(name):
    fmt = FORMATS[name]
    rows, cols = 64, 512
    packed = QuantWeight.pack(unpack_rows(fmt, random_blocks(fmt, rows, cols, np.random.default_rng(1)), rows, cols))
    file_bytes = rows * cols // fmt.values_per_block * fmt.bytes_per_block
    assert packed.nbytes <= 1.34 * file_bytes   # 1.06x (Q8_0) to 1.33x (Q4_K): packed.py says why


def test_fused_parts_of_different_formats_keep_one_weight_each():
    rng = np.random.default_rng(3)
    q, k = (unpack_rows(FORMATS["Q4_K"], random_blocks(FORMATS["Q4_K"], 32, 256, rng), 32, 256) for _ in range(2))
    v = unpack_rows(FORMATS["Q6_K"], random_blocks(FORMATS["Q6_K"], 16, 256, rng), 16, 256)
    weights = pack_fused([q, k, v])
    assert [w.rows for w in weights] == [64, 16] and [w.bits for w in weights] == [4, 6]
    np.testing.assert_array_equal(weights[0].dequantize().numpy(), concat_rows([q, k]).dequantize())


def test_quantize_on_load_schemes_round_within_half_a_step():
    w = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    for quantize, levels in ((quantize_symmetric8, 254), (quantize_asymmetric4, 15)):
        u = quantize(w)
        step = u.scales.repeat(32, axis=1)
        assert np.all(np.abs(u.dequantize() - w) <= step / 2 * (1 + 1e-5) + 1e-7)
        assert u.values.max() <= (255 if levels == 254 else 15)


def test_row_lengths_that_are_not_whole_chunks_are_refused():
    u = quantize_symmetric8(np.ones((4, 32), dtype=np.float32))
    u.values, u.scales = np.ones((4, 48), dtype=np.uint8), np.ones((4, 1), dtype=np.float32)
    with pytest.raises(ValueError, match="multiple of 32"):
        QuantWeight.pack(u)
