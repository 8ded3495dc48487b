"""GGUF reading: tensors, config and tokenizer agree with the source model and with transformers."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from deepinfer.errors import ModelLoadError
from deepinfer.model import load_model
from deepinfer.model.gguf import read_gguf, write_hf_directory
from deepinfer.model.kv import DenseKVCache
from deepinfer.testing import make_tiny_gguf, make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer

TEXTS = ["Hello, world!", "The answer is 42.", '{"name": "Alice", "age": 30}', "héllo 😀 世界",
         "<|im_start|>user\nhi<|im_end|>\n", "  spaces\tand\nnewlines  ", "x" * 50]


@pytest.fixture(scope="module", params=["llama", "qwen2", "qwen3"])
def tiny(request, tmp_path_factory):
    """(family, HF dir, F32 GGUF, Q8_0 GGUF)."""
    root = tmp_path_factory.mktemp(f"gguf-{request.param}")
    directory = make_tiny_model_dir(root / "hf", family=request.param)
    return (request.param, directory, make_tiny_gguf(directory, root / "f32.gguf", "F32"),
            make_tiny_gguf(directory, root / "q8.gguf", "Q8_0"))


def test_f32_tensors_round_trip_exactly(tiny):
    # The llama GGUF has llama.cpp's q/k permutation applied: read_gguf must undo it exactly.
    _, directory, f32, _ = tiny
    original = load_file(str(directory / "model.safetensors"))
    model = read_gguf(f32)
    assert set(model.state_dict) == set(original)
    for name, tensor in original.items():
        assert torch.equal(model.state_dict[name], tensor), name
        assert model.state_dict[name].dtype == torch.float32


def test_config_from_metadata(tiny):
    _, directory, f32, _ = tiny
    source = json.loads((directory / "config.json").read_text())
    config = read_gguf(f32).config
    for key in ("architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size",
                "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "max_position_embeddings", "tie_word_embeddings", "bos_token_id", "eos_token_id"):
        assert config[key] == source[key], key
    assert config["rms_norm_eps"] == pytest.approx(source["rms_norm_eps"])
    assert config["rope_theta"] == source["rope_theta"]


def test_tokenizer_rebuilt_from_metadata(tiny):
    _, directory, f32, _ = tiny
    original = Tokenizer.from_pretrained(directory)
    rebuilt = Tokenizer.from_pretrained(f32)
    for text in TEXTS:
        assert rebuilt.encode(text) == original.encode(text), text
        ids = original.encode(text)
        assert rebuilt.decode(ids, skip_special_tokens=False) == original.decode(ids, skip_special_tokens=False)
    messages = [{"role": "user", "content": "hi"}]
    assert rebuilt.apply_chat_template(messages) == original.apply_chat_template(messages)
    assert rebuilt.eos_token_id == original.eos_token_id
    assert rebuilt.eos_token_ids == {0, 2}  # eos + <|endoftext|>, as llama.cpp stops at both


def _logits(model, ids):
    cache = DenseKVCache(model.config.num_layers)
    return model.forward(torch.tensor(ids), torch.arange(len(ids)), cache)


def test_written_directory_loads_to_the_same_logits(tiny, tmp_path):
    _, directory, f32, q8 = tiny
    ids = Tokenizer.from_pretrained(directory).encode("The quick brown fox")
    reference = _logits(load_model(directory), ids)
    converted_f32 = write_hf_directory(read_gguf(f32), tmp_path / "f32")
    assert torch.equal(_logits(load_model(converted_f32), ids), reference)
    assert torch.equal(_logits(load_model(f32), ids), reference)
    # Quantized: the .gguf loaded directly and its converted directory are the same model.
    converted_q8 = write_hf_directory(read_gguf(q8), tmp_path / "q8")
    quantized = _logits(load_model(converted_q8), ids)
    assert torch.equal(_logits(load_model(q8), ids), quantized)
    assert not torch.equal(quantized, reference)


def test_matches_transformers_gguf_loader(tiny):
    transformers = pytest.importorskip("transformers")
    family, _, _, q8 = tiny
    if family != "llama":
        # transformers' GGUF config mapping drops head_dim for qwen2/qwen3 (Qwen3Config then
        # defaults it to 128), so it cannot load these tiny files; llama is the shared path.
        pytest.skip("transformers cannot load this tiny GGUF family")
    ours = read_gguf(q8)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(
        str(q8.parent), gguf_file=q8.name, dtype=torch.float32).state_dict()
    for name, tensor in ours.state_dict.items():
        assert torch.equal(tensor, theirs[name]), name
    ours_tok = Tokenizer.from_pretrained(q8)
    theirs_tok = transformers.AutoTokenizer.from_pretrained(str(q8.parent), gguf_file=q8.name)
    for text in TEXTS:
        assert ours_tok.encode(text) == theirs_tok.encode(text, add_special_tokens=False), text


@pytest.mark.parametrize("rope_scaling", [
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},
    {"rope_type": "linear", "factor": 4.0},
])
def test_rope_scaling_round_trips(tmp_path, rope_scaling):
    # Tiny head_dim 16, theta 1e4: the llama3 wavelengths fall in all three bands (kept, smoothed,
    # divided by factor), so a wrong reconstruction changes the logits.
    directory = make_tiny_model_dir(tmp_path / "hf")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "rope_scaling": rope_scaling}))
    path = make_tiny_gguf(directory, tmp_path / "scaled.gguf")
    model = read_gguf(path)
    assert model.config["rope_scaling"]["rope_type"] == rope_scaling["rope_type"]
    for key, value in rope_scaling.items():
        assert model.config["rope_scaling"][key] == pytest.approx(value), key
    assert "rope_freqs.weight" not in model.state_dict
    ids = list(range(3, 40))
    assert torch.equal(_logits(load_model(path), ids), _logits(load_model(directory), ids))


def test_unknown_rope_factors_are_refused(tmp_path):
    # Llama-3-style factors from constants other than Llama 3.1's: the file does not say which
    # constants made them, so they cannot be turned back into a config.
    directory = make_tiny_model_dir(tmp_path / "hf")
    config = json.loads((directory / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="rope_freqs"):
        read_gguf(make_tiny_gguf(directory, tmp_path / "odd.gguf"))


def test_random_bytes_are_a_model_load_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 100)
    with pytest.raises(ModelLoadError, match="bad.gguf"):
        read_gguf(bad)
    with pytest.raises(ModelLoadError, match="bad.gguf"):
        Tokenizer.from_pretrained(bad)


def test_truncated_file_is_a_model_load_error(tiny, tmp_path):
    _, _, f32, _ = tiny
    data = f32.read_bytes()
    for cut in (10, len(data) // 3, len(data) - 100):
        truncated = tmp_path / f"cut{cut}.gguf"
        truncated.write_bytes(data[:cut])
        with pytest.raises(ModelLoadError, match=f"cut{cut}.gguf"):
            read_gguf(truncated)


def test_unsupported_architecture_names_the_field(tmp_path):
    import gguf

    path = tmp_path / "falcon.gguf"
    writer = gguf.GGUFWriter(str(path), arch="falcon")
    writer.add_tensor("token_embd.weight", torch.zeros(4, 8).numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelLoadError, match="'falcon' model \\(general.architecture\\)"):
        read_gguf(path)


def test_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        read_gguf(tmp_path / "missing.gguf")
