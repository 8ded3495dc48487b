"""DeepseekV4Cache: the documented state layout, rollback within its margin, and forward's input checks."""

from __future__ import annotations

import pytest
import torch

from deepinfer.model import load_model
from deepinfer.model.deepseek_v4_cache import DeepseekV4Batch
from deepinfer.model.kv import DenseKVCache
from deepseek_v4_reference import V4_PROMPT, v4_reference, v4_reference_chunks


@pytest.fixture
def v4(tmp_path_factory):
    hf, directory = v4_reference("v4", tmp_path_factory)
    return hf, load_model(directory)


def feed(model, cache, ids: list[int], chunks: list[int]) -> torch.Tensor:
    rows = []
    for n in chunks:
        start = cache.num_tokens
        rows.append(model.forward(torch.tensor(ids[start:start + n]), torch.arange(start, start + n), cache))
    return torch.cat(rows)


@pytest.mark.parametrize("length, csa_pending, hca_pending", [(40, 4, 0), (38, 6, 6), (37, 5, 5)])
def test_state_layout_per_layer_type(v4, length, csa_pending, hca_pending):
    """Layers 0..3 are sliding, CSA (rate 4), HCA (rate 8), CSA; window 6, head_dim 16, index_head_dim 16."""
    _, model = v4
    cache = model.new_cache()
    feed(model, cache, V4_PROMPT, [13, length - 13])
    sliding, csa, hca, _ = cache.layers
    for layer in cache.layers:
        assert layer.window.kv.shape == (5, 16)  # sliding_window - 1 past keys
    assert sliding.compressor is None and sliding.indexer is None and hca.indexer is None
    assert hca.compressor.entries.shape == (length // 8, 16)
    assert hca.compressor.pending_kv.shape == (hca_pending, 16) == hca.compressor.pending_gate.shape
    for branch in (csa.compressor, csa.indexer):  # the last complete window stays for the overlap
        assert branch.entries.shape == (length // 4, 16)
        assert branch.pending_kv.shape == (csa_pending, 32)
        assert branch.pending_start == length - csa_pending
    assert cache.num_tokens == cache.min_length == length


@pytest.mark.parametrize("length", [29, 32, 33])
def test_rollback_then_continue_matches_transformers(v4, length):
    hf, model = v4
    cache = model.new_cache(max_rollback=8)
    feed(model, cache, V4_PROMPT, [30] + [1] * 6)  # 36 tokens: state kept back to 28
    assert cache.min_length == 28
    cache.truncate(length)
    assert cache.num_tokens == length
    got = feed(model, cache, V4_PROMPT, [1] * (len(V4_PROMPT) - length))
    expected = v4_reference_chunks(hf, V4_PROMPT, [length] + [1] * (len(V4_PROMPT) - length))[length:]
    assert (got - expected).abs().max().item() < 1e-4


def test_rollback_past_the_margin_is_refused(v4):
    _, model = v4
    cache = model.new_cache(max_rollback=3)
    feed(model, cache, V4_PROMPT, [20])
    cache.truncate(20)  # a no-op is always allowed
    with pytest.raises(ValueError, match="cannot roll this sequence back to 16 tokens.*back to 17"):
        cache.truncate(16)
    cache.truncate(17)
    feed(model, cache, V4_PROMPT, [1])  # the margin counts from the furthest length reached
    with pytest.raises(ValueError, match="back to 17"):
        cache.truncate(16)
    with pytest.raises(ValueError, match="max_rollback must be >= 0"):
        model.new_cache(max_rollback=-1)


def test_forward_checks_its_cache_and_positions(v4):
    _, model = v4
    ids = torch.tensor(V4_PROMPT[:4])
    with pytest.raises(TypeError, match="pass model.new_cache\\(\\)"):
        model.forward(ids, torch.arange(4), DenseKVCache(4))
    with pytest.raises(ValueError, match="0 cached tokens continues at position 0, not 2"):
        model.forward(ids, torch.arange(2, 6), model.new_cache())
    with pytest.raises(ValueError, match="T = 3"):
        model.forward(ids, torch.arange(4), DeepseekV4Batch([(model.new_cache(), 3)]))
    cache = model.new_cache()
    with pytest.raises(ValueError, match="appears twice"):
        DeepseekV4Batch([(cache, 2), (cache, 2)])
    with pytest.raises(ValueError, match="at least one new token"):
        DeepseekV4Batch([(cache, 0)])
    with pytest.raises(TypeError, match="DeepseekV4Cache objects"):
        DeepseekV4Batch([(DenseKVCache(4), 2)])
    assert cache.num_tokens == 0
