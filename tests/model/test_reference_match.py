"""Exact to the reference: our prefill and token-by-token decode match transformers within 1e-4."""

from __future__ import annotations

import pytest
import torch

from deepinfer.model import load_model
from deepinfer.model.kv import DenseKVCache
from model_reference import FAMILIES, PROMPT, reference_decode, reference_prefill

TOLERANCE = 1e-4
PREFILL = 5  # tokens prefilled before decoding the rest one at a time


@pytest.mark.parametrize("family", FAMILIES)
def test_prefill_logits_match_transformers(family, reference_model):
    reference, directory = reference_model(family)
    model = load_model(directory)
    cache = DenseKVCache(model.config.num_layers)
    logits = model.forward(torch.tensor(PROMPT), torch.arange(len(PROMPT)), cache)
    expected = reference_prefill(reference, PROMPT)
    assert logits.dtype == torch.float32 and logits.shape == expected.shape
    assert (logits - expected).abs().max().item() < TOLERANCE


@pytest.mark.parametrize("family", FAMILIES)
def test_decode_logits_match_transformers(family, reference_model):
    reference, directory = reference_model(family)
    model = load_model(directory)
    cache = DenseKVCache(model.config.num_layers)
    rows = [model.forward(torch.tensor(PROMPT[:PREFILL]), torch.arange(PREFILL), cache)]
    for i in range(PREFILL, len(PROMPT)):
        rows.append(model.forward(torch.tensor([PROMPT[i]]), torch.tensor([i]), cache))
    assert cache.num_tokens == len(PROMPT)
    expected = reference_decode(reference, PROMPT, PREFILL)
    assert (torch.cat(rows) - expected).abs().max().item() < TOLERANCE


def test_logits_indices_select_rows(reference_model):
    _, directory = reference_model("llama")
    model = load_model(directory)
    full = model.forward(torch.tensor(PROMPT), torch.arange(len(PROMPT)), DenseKVCache(model.config.num_layers))
    picked = model.forward(torch.tensor(PROMPT), torch.arange(len(PROMPT)), DenseKVCache(model.config.num_layers),
                           logits_indices=torch.tensor([11, 0, 4]))
    assert picked.shape == (3, model.config.vocab_size)
    # the same rows; not bitwise (the default mode promises no batch invariance: on some CPUs a GEMM
    # of 3 rows rounds differently from one of 12)
    torch.testing.assert_close(picked, full[[11, 0, 4]], rtol=1e-5, atol=1e-5)


def test_sharded_safetensors_load_the_same(reference_model, tmp_path):
    reference, directory = reference_model("qwen2-bias-sliding")
    reference.save_pretrained(tmp_path, max_shard_size="40KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    assert len(list(tmp_path.glob("model-*.safetensors"))) > 2
    sharded, single = load_model(tmp_path), load_model(directory)
    ids, pos = torch.tensor(PROMPT), torch.arange(len(PROMPT))
    assert torch.equal(sharded.forward(ids, pos, DenseKVCache(3)), single.forward(ids, pos, DenseKVCache(3)))
