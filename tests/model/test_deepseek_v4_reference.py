"""DeepSeek-V4 exact to transformers: prefill, decode, packed batches, greedy generation, bfloat16.

Chunk schedules matter beyond rounding: the Lightning Indexer's scores tie exactly when every
head's ReLU is zero, and torch.topk breaks ties by the row's length (the entries existing at
that step). transformers shares the property, so each comparison feeds transformers the same
chunks as deepinfer.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer.model import layers, load_model
from deepinfer.model.deepseek_v4_cache import DeepseekV4Batch
from deepseek_v4_reference import (V4_FAMILIES, V4_PROMPT, v4_reference, v4_reference_chunks, v4_reference_decode,
                                   v4_reference_prefill)

TOLERANCE = 1e-4
PREFILL = 13  # not a multiple of either compress rate: a partial window stays pending


@pytest.fixture
def reference(tmp_path_factory):
    return lambda family: v4_reference(family, tmp_path_factory)


def max_error(a: torch.Tensor, b: torch.Tensor) -> float:
    assert a.shape == b.shape
    return (a - b).abs().max().item()


@pytest.mark.parametrize("family", V4_FAMILIES)
def test_prefill_logits_match_transformers(family, reference):
    hf, directory = reference(family)
    model = load_model(directory)
    logits = model.forward(torch.tensor(V4_PROMPT), torch.arange(len(V4_PROMPT)), model.new_cache())
    assert logits.dtype == torch.float32
    assert max_error(logits, v4_reference_prefill(hf, V4_PROMPT)) < TOLERANCE


@pytest.mark.parametrize("family", V4_FAMILIES)
def test_decode_logits_match_transformers(family, reference):
    hf, directory = reference(family)
    model = load_model(directory)
    cache = model.new_cache()
    rows = [model.forward(torch.tensor(V4_PROMPT[:PREFILL]), torch.arange(PREFILL), cache)]
    for i in range(PREFILL, len(V4_PROMPT)):
        rows.append(model.forward(torch.tensor([V4_PROMPT[i]]), torch.tensor([i]), cache))
    assert cache.num_tokens == len(V4_PROMPT)
    assert max_error(torch.cat(rows), v4_reference_decode(hf, V4_PROMPT, PREFILL)) < TOLERANCE


# Three sequences in one flat batch per step, prefilling in chunks while others decode.
SEQUENCES = [V4_PROMPT, [(5 * i + 1) % 96 for i in range(23)], [(11 * i + 7) % 96 for i in range(9)]]
STEPS = [[13, 5, 0], [1, 11, 3]] + [[1, 1, 1]] * 6 + [[1, 1, 0]] + [[1, 0, 0]] * 19


@pytest.mark.parametrize("family", V4_FAMILIES)
def test_packed_sequences_of_different_lengths_match_transformers(family, reference):
    hf, directory = reference(family)
    model = load_model(directory)
    caches = [model.new_cache() for _ in SEQUENCES]
    done, got = [0] * len(SEQUENCES), [[] for _ in SEQUENCES]
    for step in STEPS:
        ids, positions, parts = [], [], []
        for s, n in enumerate(step):
            if n:
                ids += SEQUENCES[s][done[s]:done[s] + n]
                positions += range(done[s], done[s] + n)
                parts.append((caches[s], n))
        logits = model.forward(torch.tensor(ids), torch.tensor(positions), DeepseekV4Batch(parts))
        row = 0
        for s, n in enumerate(step):
            if n:
                got[s].append(logits[row:row + n])
                row, done[s] = row + n, done[s] + n
    assert done == [len(seq) for seq in SEQUENCES]
    for s, seq in enumerate(SEQUENCES):
        chunks = [step[s] for step in STEPS if step[s]]
        assert max_error(torch.cat(got[s]), v4_reference_chunks(hf, seq, chunks)) < TOLERANCE


def test_greedy_generation_equals_transformers(reference):
    hf, directory = reference("v4")
    model = load_model(directory)
    prompt, cache = V4_PROMPT[:12], model.new_cache()
    ids, positions, tokens = torch.tensor(prompt), torch.arange(len(prompt)), []
    for _ in range(64):
        token = int(model.forward(ids, positions, cache, logits_indices=torch.tensor([len(ids) - 1]))[0].argmax())
        tokens.append(token)
        ids, positions = torch.tensor([token]), torch.tensor([cache.num_tokens])
    with torch.no_grad():
        expected = hf.generate(torch.tensor([prompt]), max_new_tokens=64, min_new_tokens=64, do_sample=False)
    assert tokens == expected[0, len(prompt):].tolist()


@pytest.mark.parametrize("gemm", ["native", "float32"])
@pytest.mark.parametrize("family", V4_FAMILIES)
def test_bfloat16_matches_transformers_bfloat16(family, gemm, reference, monkeypatch):
    """bfloat16 GEMMs give transformers' bfloat16 logits; float32 GEMMs over the bfloat16 weights
    round each product once instead, within a bfloat16 ulp of the logits."""
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv(layers.BF16_GEMM_ENV, gemm)
    _, directory = reference(family)
    model = load_model(directory, dtype=torch.bfloat16)
    assert model.layers[0].attn.q_a.weight.dtype == (torch.bfloat16 if gemm == "native" else torch.float32)
    assert model.layers[0].attn.sinks.dtype == torch.float32  # transformers keeps it in float32
    logits = model.forward(torch.tensor(V4_PROMPT), torch.arange(len(V4_PROMPT)), model.new_cache())
    hf_bf16 = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.bfloat16, attn_implementation="eager",
                                                   experts_implementation="eager")
    expected = v4_reference_prefill(hf_bf16, V4_PROMPT)
    ulp = 0.0 if gemm == "native" else expected.abs().max().item() * 2 ** -8
    assert max_error(logits, expected) < 1e-2 + ulp
