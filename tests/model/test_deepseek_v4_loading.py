"""DeepSeek-V4 checkpoints: config fields read as transformers reads them, every tensor naming, clear errors."""

from __future__ import annotations

import copy
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from deepinfer.errors import ModelLoadError
from deepinfer.model import load_model
from deepinfer.model.config import parse_config
from deepinfer.model.deepseek_v4_ops import RopeTable
from deepseek_v4_reference import CSA, HCA, SLIDING, V4_PROMPT, V4_TINY, v4_reference


def v4_config_dict(**changes) -> dict:
    """A fresh config.json dict (deep copies: transformers' config edits the dicts it is given)."""
    raw = copy.deepcopy({**V4_TINY, "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
                         **changes})
    return {k: v for k, v in raw.items() if v is not None or k == "eos_token_id"}


LEGACY = {
    "defaults": dict(layer_types=None, mlp_layer_types=None, partial_rotary_factor=None, num_hidden_layers=6),
    "compress_ratios": dict(layer_types=None, compress_ratios=[0, 4, 128, 4, 0], compress_rate_hca=16),
    "num_hash_layers": dict(mlp_layer_types=None, num_hash_layers=1),
    "qk_rope_head_dim": dict(partial_rotary_factor=None, qk_rope_head_dim=4),
    "flat-yarn": dict(rope_parameters={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32,
                                       "beta_fast": 16}, compress_rope_theta=40000.0, rope_theta=500.0),
    "rope_scaling": dict(rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}),
    "nested-yarn": dict(rope_parameters={
        "main": {"rope_type": "default", "rope_theta": 300.0, "partial_rotary_factor": 0.5},
        "compress": {"rope_type": "yarn", "rope_theta": 9000.0, "factor": 2.0, "partial_rotary_factor": 0.5,
                     "original_max_position_embeddings": 64}}),
}


@pytest.mark.parametrize("case", LEGACY)
def test_config_folds_defaults_and_legacy_fields_as_transformers(case):
    from transformers import AutoConfig
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding

    raw = v4_config_dict(**LEGACY[case])
    kwargs = {k: v for k, v in raw.items() if k not in ("architectures", "model_type")}
    hf = AutoConfig.for_model("deepseek_v4", **kwargs)
    v4 = parse_config(raw).deepseek_v4
    assert list(v4.layer_types) == hf.layer_types and list(v4.mlp_layer_types) == hf.mlp_layer_types
    assert v4.compress_rates == tuple(hf.compress_rates.get(t, 0) for t in hf.layer_types)
    assert v4.rope_dim == hf.qk_rope_head_dim
    rotary = DeepseekV4RotaryEmbedding(hf)
    for label, rope in (("main", v4.main_rope), ("compress", v4.compress_rope)):
        table = RopeTable(rope, torch.device("cpu"))
        torch.testing.assert_close(table.inv_freq, getattr(rotary, f"{label}_inv_freq"), rtol=1e-6, atol=0)
        assert table.attention_factor == pytest.approx(getattr(rotary, f"{label}_attention_scaling"))


@pytest.mark.parametrize("changes, field", [
    (dict(layer_types=[SLIDING, CSA, "full_attention", HCA]), "layer_types"),
    (dict(layer_types=[SLIDING, CSA]), "layer_types"),
    (dict(mlp_layer_types=["moe"] * 3), "mlp_layer_types"),
    (dict(layer_types=None, compress_ratios=[0, 4, 64, 4]), "compress_ratios"),
    (dict(compress_rates={CSA: 0, HCA: 8}), "compress_rates"),
    (dict(scoring_func="softmax"), "scoring_func"),
    (dict(partial_rotary_factor=0.3125), "partial_rotary_factor"),  # 5 of 16 channels: odd
    (dict(o_groups=3), "o_groups"),
    (dict(index_topk=0), "index_topk"),
    (dict(index_head_dim=4), "index_head_dim"),
    (dict(num_experts_per_tok=9), "num_experts_per_tok"),
    (dict(mlp_bias=True), "mlp_bias"),
    (dict(rope_parameters={"rope_type": "llama3", "factor": 2.0}), "rope_parameters"),
    (dict(head_dim=None), "head_dim"),
])
def test_bad_config_fields_are_named(changes, field):
    with pytest.raises(ModelLoadError, match=f"field '{field}'"):
        parse_config(v4_config_dict(**changes))


def logits_of(directory) -> torch.Tensor:
    model = load_model(directory)
    return model.forward(torch.tensor(V4_PROMPT), torch.arange(len(V4_PROMPT)), model.new_cache())


def rewrite(source, target, rename, extra: dict | None = None) -> None:
    target.mkdir()
    shutil.copy(source / "config.json", target / "config.json")
    state = {rename(k): v for k, v in load_file(str(source / "model.safetensors")).items()}
    save_file({**state, **(extra or {})}, str(target / "model.safetensors"))


def upstream_name(saved: str) -> str:
    """DeepSeek's original name of a tensor transformers saved (transformers loads those too)."""
    return saved.removeprefix("model.").replace("embed_tokens.", "embed.").replace("hc_head.hc_", "hc_head_")


def test_original_names_with_mtp_layers_and_in_memory_names_load_the_same(tmp_path_factory, tmp_path):
    hf, directory = v4_reference("v4", tmp_path_factory)
    expected = logits_of(directory)
    rewrite(directory, tmp_path / "upstream", upstream_name, {"mtp.0.attn.wq_a.weight": torch.zeros(2, 2)})
    assert torch.equal(logits_of(tmp_path / "upstream"), expected)
    (tmp_path / "memory").mkdir()  # transformers' module names, stacked experts included
    shutil.copy(directory / "config.json", tmp_path / "memory" / "config.json")
    save_file({k: v.contiguous() for k, v in hf.state_dict().items()}, str(tmp_path / "memory" / "model.safetensors"))
    torch.testing.assert_close(logits_of(tmp_path / "memory"), expected, rtol=0, atol=1e-5)


def test_unexpected_missing_and_duplicate_tensors_are_named(tmp_path_factory, tmp_path):
    _, directory = v4_reference("v4", tmp_path_factory)
    rewrite(directory, tmp_path / "extra", lambda k: k, {"model.layers.0.attn.bonus": torch.zeros(2)})
    with pytest.raises(ModelLoadError, match="unexpected tensor.*model.layers.0.attn.bonus"):
        load_model(tmp_path / "extra")
    rewrite(directory, tmp_path / "missing", lambda k: k.replace("hc_head_fn", "x").replace("hc_head.hc_fn", "x"))
    with pytest.raises(ModelLoadError, match="'model.hc_head.hc_fn' is missing"):
        load_model(tmp_path / "missing")
    state = load_file(str(directory / "model.safetensors"))
    rewrite(directory, tmp_path / "twice", lambda k: k, {"lm_head.weight": state["head.weight"].clone()})
    with pytest.raises(ModelLoadError, match="under two names"):
        load_model(tmp_path / "twice")
    rewrite(directory, tmp_path / "hash", lambda k: k,
            {"model.layers.0.ffn.gate.tid2eid": torch.full_like(state["model.layers.0.ffn.gate.tid2eid"], 8)})
    with pytest.raises(ModelLoadError, match="tid2eid' names experts outside 0..7"):
        load_model(tmp_path / "hash")


def test_fp8_and_fp4_checkpoints_are_refused_naming_what_they_hold(tmp_path_factory, tmp_path):
    """V4's released weights are FP8 (FP4 experts) with block scales: refused, never converted unscaled."""
    import json

    _, directory = v4_reference("v4", tmp_path_factory)
    rewrite(directory, tmp_path / "declared", lambda k: k)
    config = json.loads((directory / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
    (tmp_path / "declared" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match=r"field 'quantization_config' declares quantized weights \(fp8\)"):
        load_model(tmp_path / "declared")
    name = "model.layers.1.attn.wq_a.weight"
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):  # float8 tensors, no quantization_config
        target = tmp_path / str(dtype)
        state = load_file(str(directory / "model.safetensors"))
        assert name in state
        target.mkdir()
        shutil.copy(directory / "config.json", target / "config.json")
        save_file({**state, name: state[name].to(dtype)}, str(target / "model.safetensors"))
        with pytest.raises(ModelLoadError, match=f"'{name}' holds {str(dtype)[6:]} weights"):
            load_model(target)
