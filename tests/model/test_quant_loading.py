"""Loading quantized: a GGUF's blocks kept as they are, float weights quantized on load, bad files refused."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model import load_model
from deepinfer.model.hub import MARKER, kept_gguf
from deepinfer.model.kv import DenseKVCache
from deepinfer.model.layers import Linear
from deepinfer.model.quant.choice import resolve_quantization
from deepinfer.testing import make_tiny_gguf, make_tiny_model_dir

IDS = [5, 17, 3, 60, 42, 8, 99, 12, 31, 7, 64, 2]


@pytest.fixture(scope="module", params=["llama", "qwen2"])   # qwen2: q/k/v biases on quantized weights
def tiny(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    directory = make_tiny_model_dir(root / "model", request.param)
    files = {kind: make_tiny_gguf(directory, root / f"{kind}.gguf", kind) for kind in ("Q8_0", "Q4_0", "Q4_1")}
    return directory, files


def logits(model) -> torch.Tensor:
    return model.forward(torch.tensor(IDS), torch.arange(len(IDS)), DenseKVCache(model.config.num_layers))


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_0", "Q4_1"])
def test_gguf_blocks_stay_quantized_and_match_the_dequantized_model(tiny, kind):
    _, files = tiny
    quantized, dequantized = load_model(files[kind], quantization="gguf"), load_model(files[kind])
    linears = [m for m in quantized.modules() if isinstance(m, Linear)]
    assert linears and all(m.quantized is not None and m.weight is None for m in linears)
    assert quantized.embedding.head_q is not None and quantized.embedding.embed_q is not None
    assert quantized.norm.weight.dtype == torch.float32          # float tensors stay float
    # Same weights; only the activations' 8-bit rounding per 32 values differs (measured 0.8-0.9%
    # relative to the logits on these random 2-layer models).
    assert relative_error(logits(quantized), logits(dequantized)) < 0.02
    assert torch.equal(quantized.embedding.embed_tokens(torch.tensor(IDS)),
                       dequantized.embedding.embed_tokens(torch.tensor(IDS)))


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_float_weights_quantize_on_load(tiny, mode):
    directory, files = tiny
    reference = logits(load_model(directory))
    for source in (directory, make_tiny_gguf(directory, directory.parent / "f32.gguf", "F32")):
        model = load_model(source, quantization=mode)
        assert all(m.quantized is not None for m in model.modules() if isinstance(m, Linear))
        # weights and activations rounded (measured 1.4% for int8, 15-16% for int4: 4 bits of
        # Gaussian random weights in a model with no redundancy)
        assert relative_error(logits(model), reference) < (0.03 if mode == "int8" else 0.25)


def test_bfloat16_activations_on_quantized_weights(tiny):
    _, files = tiny
    model = load_model(files["Q8_0"], dtype=torch.bfloat16, quantization="gguf")
    out = logits(model)
    assert out.dtype == torch.float32 and torch.isfinite(out).all()
    assert relative_error(out, logits(load_model(files["Q8_0"], quantization="gguf"))) < 0.05


def test_a_type_deepinfer_does_not_run_quantized_is_refused_by_name(tiny, tmp_path):
    directory, _ = tiny
    q5 = make_tiny_gguf(directory, tmp_path / "q5.gguf", "Q5_0")
    with pytest.raises(ModelLoadError, match=r"q5\.gguf: tensor '[a-z_.0-9]+' is Q5_0.*quantization=None"):
        load_model(q5, quantization="gguf")
    assert load_model(q5).config.num_layers == 2     # the float path still dequantizes it


def test_truncated_file_names_the_tensor_past_the_end(tiny, tmp_path):
    _, files = tiny
    data = files["Q4_1"].read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:len(data) - 1000])
    for quantization in ("gguf", None):
        with pytest.raises(ModelLoadError, match=r"cut\.gguf: tensor '[a-z_.0-9]+' needs bytes .* truncated"):
            load_model(cut, quantization=quantization)


def test_shape_that_is_not_whole_blocks_is_refused(tiny, tmp_path):
    _, files = tiny
    data = bytearray(files["Q8_0"].read_bytes())
    name = b"token_embd.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    dims = struct.unpack_from("<I", data, at)[0]
    assert dims == 2
    struct.pack_into("<Q", data, at + 4, 48)                 # rows of 48 values: not whole Q8_0 blocks
    bad = tmp_path / "bad_shape.gguf"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match=r"bad_shape\.gguf: tensor 'token_embd\.weight' \(Q8_0\) has rows of 48"):
        load_model(bad, quantization="gguf")


def test_quantization_choice(tiny, tmp_path):
    directory, files = tiny
    assert resolve_quantization(files["Q8_0"], "auto") == (files["Q8_0"], "gguf")
    assert resolve_quantization(directory, "auto") == (directory, None)
    assert resolve_quantization(files["Q8_0"], "none") == (files["Q8_0"], None)
    assert resolve_quantization(directory, "int4") == (directory, "int4")
    with pytest.raises(ModelLoadError, match="holds none to keep quantized"):
        resolve_quantization(directory, "gguf")
    with pytest.raises(ModelLoadError, match="not one of"):
        resolve_quantization(directory, "int3")
    with pytest.raises(ModelLoadError, match="not supported"):
        load_model(directory, quantization="fp8")
    kept = tmp_path / "converted"
    kept.mkdir()
    (kept / "model.Q8_0.gguf").write_bytes(files["Q8_0"].read_bytes())
    (kept / MARKER).write_text(json.dumps({"version": 2, "gguf": "model.Q8_0.gguf"}))
    assert kept_gguf(kept) == kept / "model.Q8_0.gguf"
    assert resolve_quantization(kept, "auto") == (kept / "model.Q8_0.gguf", "gguf")
