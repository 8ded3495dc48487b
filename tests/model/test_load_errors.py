"""Bad model input gives a ModelLoadError naming the field, tensor or file."""

from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from deepinfer.errors import ModelLoadError, UserError
from deepinfer.model import load_model


@pytest.fixture
def model_dir(reference_model, tmp_path):
    _, directory = reference_model("llama")
    target = tmp_path / "model"
    shutil.copytree(directory, target)
    return target


def edit_config(directory, **changes):
    path = directory / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


def test_missing_config_field_is_named(model_dir):
    edit_config(model_dir, hidden_size=...)
    with pytest.raises(ModelLoadError, match=r"config\.json: field 'hidden_size' is missing"):
        load_model(model_dir)


def test_wrong_type_config_field_is_named(model_dir):
    edit_config(model_dir, num_attention_heads="four")
    with pytest.raises(ModelLoadError, match=r"'num_attention_heads' must be int, got 'four'"):
        load_model(model_dir)


def test_unsupported_architecture_lists_the_supported_ones(model_dir):
    edit_config(model_dir, architectures=["GPT2LMHeadModel"])
    with pytest.raises(ModelLoadError) as info:
        load_model(model_dir)
    message = str(info.value)
    assert "GPT2LMHeadModel" in message and "config.json" in message
    assert all(a in message for a in ("LlamaForCausalLM", "Qwen3ForCausalLM", "DeepseekV3ForCausalLM"))


def test_missing_tensor_is_named(model_dir):
    weights = load_file(model_dir / "model.safetensors")
    del weights["model.layers.1.self_attn.k_proj.weight"]
    save_file(weights, model_dir / "model.safetensors")
    with pytest.raises(ModelLoadError, match=r"tensor 'model\.layers\.1\.self_attn\.k_proj\.weight' is missing"):
        load_model(model_dir)


def test_misshaped_tensor_names_tensor_and_file(model_dir):
    weights = load_file(model_dir / "model.safetensors")
    weights["model.norm.weight"] = weights["model.norm.weight"][:-1].clone()
    save_file(weights, model_dir / "model.safetensors")
    with pytest.raises(ModelLoadError) as info:
        load_model(model_dir)
    assert "model.safetensors: tensor 'model.norm.weight' has shape [63], expected [64]" in str(info.value)


def test_unexpected_tensor_is_named(model_dir):
    weights = load_file(model_dir / "model.safetensors")
    weights["model.layers.0.self_attn.q_norm.weight"] = weights["model.norm.weight"].clone()
    save_file(weights, model_dir / "model.safetensors")
    with pytest.raises(ModelLoadError, match=r"unexpected tensor\(s\) 'model\.layers\.0\.self_attn\.q_norm\.weight'"):
        load_model(model_dir)


def test_corrupt_safetensors_names_the_file(model_dir):
    path = model_dir / "model.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ModelLoadError) as info:
        load_model(model_dir)
    assert str(path) in str(info.value) and "corrupt" in str(info.value)


def test_garbage_header_names_the_file(model_dir):
    path = model_dir / "model.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!" + b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="model.safetensors: not a readable safetensors file"):
        load_model(model_dir)


def test_missing_shard_is_named(reference_model, tmp_path):
    reference, _ = reference_model("llama")
    reference.save_pretrained(tmp_path, max_shard_size="40KB")
    shard = sorted(tmp_path.glob("model-*.safetensors"))[1]
    shard.unlink()
    with pytest.raises(ModelLoadError, match=f"{shard.name}: shard listed in model.safetensors.index.json is missing"):
        load_model(tmp_path)


def test_missing_directory_and_missing_config(tmp_path):
    with pytest.raises(ModelLoadError, match="no such model directory"):
        load_model(tmp_path / "nope")
    with pytest.raises(ModelLoadError, match=r"config\.json: missing"):
        load_model(tmp_path)


def test_missing_gguf_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such GGUF file"):
        load_model(tmp_path / "model.gguf")
