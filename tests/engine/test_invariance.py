"""The invariant mode's tiled linear layers: a row's result does not depend on the other rows."""

import pytest
import torch

from deepinfer.engine.invariance import DEFAULT_TILE, tiled_linear

SHAPES = [(576, 960), (576, 3072), (1536, 576), (576, 49152), (64, 48)]  # SmolLM2's projections, a tiny one


@pytest.mark.parametrize("k,n", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_a_row_gives_the_same_bits_alone_and_anywhere_in_a_batch(k, n, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(k + n)
        weight, row = torch.randn(n, k, generator=gen), torch.randn(1, k, generator=gen)
        alone = tiled_linear(row, weight, None, DEFAULT_TILE)[0]
        for batch, position in [(2, 1), (DEFAULT_TILE, DEFAULT_TILE - 1), (DEFAULT_TILE + 3, DEFAULT_TILE + 1),
                                (37, 20)]:
            rows = torch.randn(batch, k, generator=gen)
            rows[position] = row[0]
            assert torch.equal(tiled_linear(rows, weight, None, DEFAULT_TILE)[position], alone), (batch, position)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("quantization, expected", [("int8", True), ("int4", True), (None, False)])
def test_batch_invariance_is_on_by_default_exactly_for_quantized_models(tmp_path, quantization, expected):
    from deepinfer.engine.llm import load_engine
    from deepinfer.testing import make_tiny_model_dir

    path = make_tiny_model_dir(tmp_path / "tiny")
    assert load_engine(str(path), quantization=quantization).config.batch_invariant is expected
    assert load_engine(str(path), quantization=quantization, batch_invariant=not expected).config.batch_invariant \
        is (not expected)   # an explicit choice wins


def test_a_float_matrix_among_quantized_ones_keeps_the_default_off(tmp_path):
    import torch.nn as nn

    from deepinfer.engine.llm import load_engine
    from deepinfer.model import quantized_throughout
    from deepinfer.testing import make_tiny_model_dir

    model = load_engine(str(make_tiny_model_dir(tmp_path / "tiny")), quantization="int8").model
    assert quantized_throughout(model)
    model.extra = nn.Linear(4, 4)          # a float matrix the kernel does not cover
    assert not quantized_throughout(model)
