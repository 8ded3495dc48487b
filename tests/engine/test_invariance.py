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
