"""Several sequences packed in one forward give each sequence's own logits; bfloat16 loads and stays close."""

from __future__ import annotations

import pytest
import torch

from deepinfer.model import layers, load_model
from deepinfer.model.kv import DenseKVCache
from model_reference import PROMPT, reference_prefill

OTHER = [7, 1, 95, 33, 33, 60, 4]


class PackedCache:
    """The simplest multi-sequence cache: consecutive runs of tokens, one DenseKVCache per sequence."""

    def __init__(self, num_layers: int, num_sequences: int) -> None:
        self.caches = [DenseKVCache(num_layers) for _ in range(num_sequences)]
        self.lengths: list[int] = []

    def attend(self, layer, q, k, v, *, scale, sliding_window=None):
        outs, start = [], 0
        for cache, n in zip(self.caches, self.lengths):
            end = start + n
            outs.append(cache.attend(layer, q[start:end], k[start:end], v[start:end],
                                     scale=scale, sliding_window=sliding_window))
            start = end
        return torch.cat(outs)


def alone(model, ids: list[int], prefill: int) -> torch.Tensor:
    cache = DenseKVCache(model.config.num_layers)
    rows = [model.forward(torch.tensor(ids[:prefill]), torch.arange(prefill), cache)]
    for i in range(prefill, len(ids)):
        rows.append(model.forward(torch.tensor([ids[i]]), torch.tensor([i]), cache))
    return torch.cat(rows)


@pytest.mark.parametrize("family", ["mistral-sliding", "qwen3-qknorm", "deepseek-v3"])
def test_two_sequences_packed_match_each_alone(family, reference_model):
    _, directory = reference_model(family)
    model = load_model(directory)
    a, b = PROMPT, OTHER
    expected_a, expected_b = alone(model, a, 9), alone(model, b, 4)
    cache = PackedCache(model.config.num_layers, 2)
    # Prefill both (9 and 4 tokens) in one forward; only the last token of each needs logits.
    cache.lengths = [9, 4]
    ids, positions = torch.tensor(a[:9] + b[:4]), torch.cat([torch.arange(9), torch.arange(4)])
    last = model.forward(ids, positions, cache, logits_indices=torch.tensor([8, 12]))
    torch.testing.assert_close(last, torch.stack([expected_a[8], expected_b[3]]), atol=1e-5, rtol=0)
    # Then decode one token of each per forward, at different positions.
    cache.lengths = [1, 1]
    for step in range(3):
        ids = torch.tensor([a[9 + step], b[4 + step]])
        logits = model.forward(ids, torch.tensor([9 + step, 4 + step]), cache)
        torch.testing.assert_close(logits, torch.stack([expected_a[9 + step], expected_b[4 + step]]),
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("gemm", ["native", "float32"])
@pytest.mark.parametrize("family", ["smollm2-tied", "qwen2-bias-sliding", "qwen3-qknorm", "deepseek-v3"])
def test_bfloat16_matches_transformers_bfloat16_and_stays_close(family, gemm, reference_model, monkeypatch):
    """Both ways of multiplying a bfloat16 model (bfloat16 GEMMs, or float32 GEMMs over float32
    copies of the bfloat16 weights) match transformers' bfloat16 logits to bfloat16 rounding."""
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv(layers.BF16_GEMM_ENV, gemm)
    reference, directory = reference_model(family)
    model = load_model(directory, dtype=torch.bfloat16)
    o_proj = model.layers[0].attn.o.weight
    assert o_proj.dtype == (torch.bfloat16 if gemm == "native" else torch.float32)
    assert torch.equal(o_proj, o_proj.to(torch.bfloat16).to(o_proj.dtype))  # bfloat16 values either way
    logits = model.forward(torch.tensor(PROMPT), torch.arange(len(PROMPT)), DenseKVCache(model.config.num_layers))
    assert logits.dtype == torch.float32
    hf_bf16 = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.bfloat16, attn_implementation="eager",
                                                   experts_implementation="eager")
    expected = reference_prefill(hf_bf16, PROMPT)
    # transformers rounds its logits to bfloat16; float32 GEMMs return them unrounded (one ulp more)
    ulp = 0.0 if gemm == "native" else expected.abs().max().item() * 2 ** -8
    assert (logits - expected).abs().max().item() < 1e-2 + ulp
    if model.config.moe is None:  # MoE routing may flip between dtypes; dense models just lose precision
        assert (logits - reference_prefill(reference, PROMPT)).abs().max().item() < 0.3


def test_float32_gemm_of_bfloat16_activations_rounds_once():
    """linear() over a float32 copy of bfloat16 weights: bfloat16 in, bfloat16 out, the float32
    product of the exact values rounded once."""
    torch.manual_seed(0)
    x = torch.randn(5, 16).to(torch.bfloat16)
    w = torch.randn(8, 16).to(torch.bfloat16)
    b = torch.randn(8).to(torch.bfloat16)
    out = layers.linear(x, w.float(), b.float())
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, torch.nn.functional.linear(x.float(), w.float(), b.float()).to(torch.bfloat16))
    assert torch.equal(layers.linear(x, w, b), torch.nn.functional.linear(x, w, b))  # same dtype: untouched


@pytest.mark.parametrize("amx, env, expected", [(False, "", True), (True, "", False), (False, "auto", True),
                                                (True, "float32", True), (False, "native", False)])
def test_bfloat16_gemm_policy(amx, env, expected, monkeypatch):
    """auto: float32 GEMMs on a CPU without AMX (its bfloat16 matmul is the slower one), never
    elsewhere; DEEPINFER_BF16_GEMM overrides."""
    monkeypatch.setattr(layers, "_cpu_has_amx_bf16", lambda: amx)
    monkeypatch.setenv(layers.BF16_GEMM_ENV, env)
    assert layers.bf16_gemm_in_float32(torch.device("cpu")) is expected
    if env in ("", "auto"):
        assert layers.bf16_gemm_in_float32(torch.device("meta")) is False


def test_bfloat16_gemm_policy_rejects_unknown_values(monkeypatch):
    monkeypatch.setenv(layers.BF16_GEMM_ENV, "fp8")
    with pytest.raises(ValueError, match="DEEPINFER_BF16_GEMM='fp8'.*auto, native, float32"):
        layers.bf16_gemm_in_float32(torch.device("cpu"))


def test_bfloat16_router_stays_float32(reference_model):
    _, directory = reference_model("deepseek-v3")
    model = load_model(directory, dtype=torch.bfloat16)
    router = model.layers[1].mlp.router
    assert router.weight.dtype == torch.float32 and router.bias.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_projection_weights_keep_values_in_the_faster_gemm_layout(dtype, reference_model, monkeypatch):
    """float32 projections are the transposed view of a contiguous [in, out] matrix (layers.gemm_layout:
    MKL multiplies x @ W^T faster that way); bfloat16 keeps the checkpoint's row-major layout. The
    values are the checkpoint's either way (the reference tests check the logits)."""
    from safetensors.torch import load_file

    monkeypatch.setenv(layers.BF16_GEMM_ENV, "native")
    _, directory = reference_model("smollm2-tied")
    model = load_model(directory, dtype=dtype)
    state = load_file(str(directory / "model.safetensors"))
    down = model.layers[0].mlp.down.weight
    assert down.shape == state["model.layers.0.mlp.down_proj.weight"].shape
    assert torch.equal(down.float(), state["model.layers.0.mlp.down_proj.weight"].to(dtype).float())
    assert down.t().is_contiguous() == (dtype == torch.float32)
    assert down.is_contiguous() == (dtype != torch.float32)


@pytest.mark.parametrize("dtype, gemm", [(torch.float32, "native"), (torch.bfloat16, "native"),
                                         (torch.bfloat16, "float32")])
def test_tied_embedding_is_one_matrix_in_the_gemm_layout(dtype, gemm, reference_model, monkeypatch):
    """A tied vocabulary matrix is stored once, in gemm_layout for float32; looking tokens up in it
    (columns of the contiguous [hidden, vocab] copy) gives the checkpoint's rows exactly."""
    from safetensors.torch import load_file

    monkeypatch.setenv(layers.BF16_GEMM_ENV, gemm)
    _, directory = reference_model("smollm2-tied")
    model = load_model(directory, dtype=dtype)
    emb = model.embedding
    assert emb.tied and emb.embed is emb.head
    assert emb.head.t().is_contiguous() == (emb.head.dtype == torch.float32)
    assert emb.head.dtype == (dtype if gemm == "native" else torch.float32)
    rows = load_file(str(directory / "model.safetensors"))["model.embed_tokens.weight"].to(dtype)
    ids = torch.tensor([0, 5, 5, rows.shape[0] - 1, 3])
    got = emb.embed_tokens(ids)
    assert got.is_contiguous() and torch.equal(got, rows[ids])
