"""The model math on a CUDA device: every family's prefill and decode logits match transformers
run on the same device, and match our own CPU logits. Skipped where torch sees no GPU (CI has none;
run it on a machine with one: `python -m pytest tests/model/test_cuda_reference.py`)."""

from __future__ import annotations

import pytest
import torch

from deepinfer.model import load_model
from deepinfer.model.kv import DenseKVCache
from model_reference import FAMILIES, PROMPT

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# float32 on the GPU: cuBLAS and the fused SDPA kernels sum in another order than the CPU
# (TF32 stays off: torch's default for float32 matmuls), so the bound is looser than the CPU's 1e-4.
TOLERANCE = 2e-4
PREFILL = 5


@torch.no_grad()
def _reference_on_cuda(reference) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers on the GPU: prefill logits [T, V], and the last prefill row + decode rows."""
    from transformers import DynamicCache

    reference = reference.to("cuda")
    try:
        ids = torch.tensor([PROMPT], device="cuda")
        prefill = reference(ids).logits[0].float().cpu()
        cache = DynamicCache(config=reference.config)
        rows = [reference(ids[:, :PREFILL], cache=cache, use_cache=True).logits[0, -1:]]
        for i in range(PREFILL, len(PROMPT)):
            rows.append(reference(ids[:, i:i + 1], cache=cache, use_cache=True).logits[0])
        return prefill, torch.cat(rows).float().cpu()
    finally:
        reference.to("cpu")


@torch.no_grad()
def _ours_on(directory, device: str) -> torch.Tensor:
    model = load_model(directory, device=device)
    cache = DenseKVCache(model.config.num_layers)
    ids, pos = torch.tensor(PROMPT, device=device), torch.arange(len(PROMPT), device=device)
    rows = [model.forward(ids[:PREFILL], pos[:PREFILL], cache)[-1:]]
    for i in range(PREFILL, len(PROMPT)):
        rows.append(model.forward(ids[i:i + 1], pos[i:i + 1], cache))
    return torch.cat(rows).float().cpu()  # [len(PROMPT) - PREFILL + 1, vocab]


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_cuda_prefill_and_decode_match_transformers_on_cuda(family, reference_model):
    reference, directory = reference_model(family)
    expected_prefill, expected_decode = _reference_on_cuda(reference)
    model = load_model(directory, device="cuda")
    logits = model.forward(torch.tensor(PROMPT, device="cuda"), torch.arange(len(PROMPT), device="cuda"),
                           DenseKVCache(model.config.num_layers))
    assert logits.device.type == "cuda"
    assert (logits.float().cpu() - expected_prefill).abs().max().item() < TOLERANCE
    assert (_ours_on(directory, "cuda") - expected_decode).abs().max().item() < TOLERANCE


@pytest.mark.parametrize("family", FAMILIES)
def test_cuda_logits_match_our_cpu_logits(family, reference_model):
    _, directory = reference_model(family)
    assert (_ours_on(directory, "cuda") - _ours_on(directory, "cpu")).abs().max().item() < TOLERANCE
