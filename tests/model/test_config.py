"""config.json parsing: transformers 5.x semantics for defaults, sliding windows and rope scaling."""

from __future__ import annotations

import re

import pytest
import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model import ModelConfig
from deepinfer.model.rope import inverse_frequencies

BASE = dict(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4)

# Shapes and rope settings as in the published config.json files (legacy v4 keys: rope_theta, rope_scaling).
REAL = {
    "SmolLM2-135M": dict(architectures=["LlamaForCausalLM"], hidden_size=576, num_attention_heads=9,
                         num_key_value_heads=3, num_hidden_layers=30, intermediate_size=1536, vocab_size=49152,
                         rope_theta=100000, max_position_embeddings=8192, tie_word_embeddings=True),
    "Llama-3.1-8B": dict(architectures=["LlamaForCausalLM"], hidden_size=4096, num_attention_heads=32,
                         num_key_value_heads=8, num_hidden_layers=32, intermediate_size=14336, vocab_size=128256,
                         rope_theta=500000.0, max_position_embeddings=131072, rope_scaling={
                             "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    "Qwen3-8B-yarn": dict(architectures=["Qwen3ForCausalLM"], hidden_size=4096, num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, num_hidden_layers=36, intermediate_size=12288,
                          vocab_size=151936, rope_theta=1000000, max_position_embeddings=40960,
                          rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
                          use_sliding_window=False, sliding_window=None, max_window_layers=36),
    "DeepSeek-V3": dict(architectures=["DeepseekV3ForCausalLM"], hidden_size=7168, num_attention_heads=128,
                        num_key_value_heads=128, num_hidden_layers=61, intermediate_size=18432, vocab_size=129280,
                        kv_lora_rank=512, q_lora_rank=1536, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, moe_intermediate_size=2048, n_routed_experts=256, num_experts_per_tok=8,
                        n_group=8, topk_group=4, n_shared_experts=1, first_k_dense_replace=3,
                        routed_scaling_factor=2.5, norm_topk_prob=True, max_position_embeddings=163840,
                        rope_theta=10000, rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 40,
                                                        "mscale": 1.0, "mscale_all_dim": 1.0,
                                                        "original_max_position_embeddings": 4096, "type": "yarn"}),
    "Llama-dynamic": dict(BASE, architectures=["LlamaForCausalLM"], rope_scaling={"type": "dynamic", "factor": 2.0}),
    "Llama-linear": dict(BASE, architectures=["LlamaForCausalLM"], rope_theta=5e5,
                         rope_scaling={"type": "linear", "factor": 4.0}),
}


def transformers_config(raw):
    from transformers import AutoConfig

    model_type = {"LlamaForCausalLM": "llama", "Qwen3ForCausalLM": "qwen3", "Qwen2ForCausalLM": "qwen2",
                  "MistralForCausalLM": "mistral", "DeepseekV3ForCausalLM": "deepseek_v3"}[raw["architectures"][0]]
    return AutoConfig.for_model(model_type, **{k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()})


@pytest.mark.parametrize("name", REAL)
def test_rope_and_softmax_scale_match_transformers_for_published_configs(name):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import yarn_apply_mscale

    raw = REAL[name]
    ours = ModelConfig.from_dict(raw)
    theirs = transformers_config(raw)
    rope_type = theirs.rope_parameters["rope_type"]
    if rope_type == "default":
        dim = ours.rope.dim
        expected = 1.0 / (theirs.rope_parameters["rope_theta"] ** (torch.arange(0, dim, 2).float() / dim)), 1.0
    else:
        expected = ROPE_INIT_FUNCTIONS[rope_type](theirs)
    inv_freq, attention_factor = inverse_frequencies(ours.rope)
    assert ours.rope.rope_type == rope_type
    torch.testing.assert_close(inv_freq, expected[0], rtol=0, atol=0)
    assert attention_factor == pytest.approx(expected[1], rel=1e-12)
    if ours.mla is not None:
        expected_scale = yarn_apply_mscale(theirs.rope_parameters, theirs.qk_head_dim ** -0.5)
        assert ours.softmax_scale == pytest.approx(expected_scale, rel=1e-12)
        assert ours.softmax_scale != pytest.approx(theirs.qk_head_dim ** -0.5)  # mscale_all_dim matters
    else:
        assert ours.softmax_scale == theirs.head_dim ** -0.5


def test_published_shapes():
    smol = ModelConfig.from_dict(REAL["SmolLM2-135M"])
    assert (smol.num_layers, smol.num_heads, smol.num_kv_heads, smol.head_dim) == (30, 9, 3, 64)
    assert smol.tie_word_embeddings and smol.sliding_window is None
    ds = ModelConfig.from_dict(REAL["DeepSeek-V3"])
    assert (ds.num_kv_heads, ds.head_dim, ds.v_head_dim, ds.rope.dim) == (128, 192, 128, 64)
    assert ds.rope.interleaved and ds.moe.first_k_dense_replace == 3 and ds.mla.q_lora_rank == 1536


@pytest.mark.parametrize("arch", ["Qwen2ForCausalLM", "Qwen3ForCausalLM"])
@pytest.mark.parametrize("settings", [
    dict(use_sliding_window=False, sliding_window=8),
    dict(use_sliding_window=True, sliding_window=8, max_window_layers=2),
    dict(use_sliding_window=True, sliding_window=8, max_window_layers=0),
    dict(use_sliding_window=True, sliding_window=8,
         layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"]),
    dict(use_sliding_window=True),  # transformers' default window of 4096 from layer 28 on
])
def test_qwen_sliding_layers_follow_transformers(arch, settings):
    raw = dict(BASE, architectures=[arch], head_dim=16, num_key_value_heads=2, **settings)
    ours = ModelConfig.from_dict(raw)
    theirs = transformers_config(raw)
    expected = tuple(theirs.sliding_window if t == "sliding_attention" else None for t in theirs.layer_types)
    assert ours.layer_sliding_windows == expected


def test_mistral_window_defaults_like_transformers():
    raw = dict(BASE, architectures=["MistralForCausalLM"], num_key_value_heads=2)
    assert ModelConfig.from_dict(raw).layer_sliding_windows == (4096,) * 4
    assert ModelConfig.from_dict(dict(raw, sliding_window=None)).sliding_window is None
    assert ModelConfig.from_dict(dict(raw, sliding_window=16)).layer_sliding_windows == (16,) * 4


def test_defaults_per_architecture():
    qwen3 = ModelConfig.from_dict(dict(BASE, architectures=["Qwen3ForCausalLM"], num_key_value_heads=2))
    assert qwen3.head_dim == 128 and qwen3.qk_norm and not qwen3.qkv_bias  # Qwen3Config's head_dim default
    qwen2 = ModelConfig.from_dict(dict(BASE, architectures=["Qwen2ForCausalLM"], num_key_value_heads=2))
    assert qwen2.head_dim == 16 and qwen2.qkv_bias and not qwen2.o_bias
    mistral = ModelConfig.from_dict(dict(BASE, architectures=["MistralForCausalLM"], num_attention_heads=16))
    assert mistral.num_kv_heads == 8  # MistralConfig's default
    mistral = ModelConfig.from_dict(dict(BASE, architectures=["MistralForCausalLM"], num_key_value_heads=None))
    assert mistral.num_kv_heads == 4  # null: as many as the attention heads
    llama = ModelConfig.from_dict(dict(BASE, architectures=["LlamaForCausalLM"], eos_token_id=[5, 7]))
    assert llama.num_kv_heads == 4 and llama.eos_token_ids == (5, 7) and llama.rope.theta == 10000.0


@pytest.mark.parametrize("raw, message", [
    (dict(BASE), "field 'architectures' is missing"),
    (dict(BASE, architectures=["LlamaForCausalLM"], num_hidden_layers=None), "field 'num_hidden_layers' is missing"),
    (dict(BASE, architectures=["LlamaForCausalLM"], vocab_size=0), "field 'vocab_size' must be positive"),
    (dict(BASE, architectures=["LlamaForCausalLM"], num_key_value_heads=3), "field 'num_key_value_heads' must divide"),
    (dict(BASE, architectures=["LlamaForCausalLM"], hidden_act="gelu"), "field 'hidden_act' is 'gelu'"),
    (dict(BASE, architectures=["LlamaForCausalLM"], rope_scaling={"type": "longrope"}), "rope_type 'longrope'"),
    (dict(BASE, architectures=["LlamaForCausalLM"], rope_scaling={"rope_type": "llama3", "factor": 8.0}),
     "field 'low_freq_factor' is missing"),
    (dict(BASE, architectures=["Qwen2ForCausalLM"], num_key_value_heads=2, layer_types=["full_attention"]),
     "field 'layer_types'"),
    (dict(REAL["DeepSeek-V3"], kv_lora_rank=None), "field 'kv_lora_rank' is missing"),
    (dict(REAL["DeepSeek-V3"], n_group=3), "field 'n_group' must divide n_routed_experts"),
    (dict(REAL["DeepSeek-V3"], quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]}),
     "field 'quantization_config' declares quantized weights (fp8)"),
])
def test_bad_configs_name_the_field_and_file(raw, message):
    with pytest.raises(ModelLoadError, match="^/m/config.json.*" + re.escape(message)):
        ModelConfig.from_dict(raw, source="/m/config.json")


def test_deepseek_defaults_follow_transformers():
    raw = {k: v for k, v in REAL["DeepSeek-V3"].items()
           if k not in ("n_group", "topk_group", "first_k_dense_replace", "q_lora_rank", "n_shared_experts",
                        "routed_scaling_factor", "norm_topk_prob", "rope_scaling")}
    ours, theirs = ModelConfig.from_dict(raw), transformers_config(raw)
    assert (ours.moe.num_groups, ours.moe.topk_groups, ours.moe.first_k_dense_replace) == (
        theirs.n_group, theirs.topk_group, theirs.first_k_dense_replace)
    assert (ours.mla.q_lora_rank, ours.moe.num_shared_experts, ours.moe.routed_scaling_factor,
            ours.moe.norm_topk_prob) == (theirs.q_lora_rank, theirs.n_shared_experts,
                                         theirs.routed_scaling_factor, theirs.norm_topk_prob)
    assert ours.rope.interleaved == theirs.rope_interleave and ours.rope.rope_type == "default"


@pytest.mark.parametrize("arch", ["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"])
def test_llama_style_defaults_follow_transformers(arch):
    raw = dict(BASE, architectures=[arch], hidden_size=256, num_attention_heads=32)
    ours, theirs = ModelConfig.from_dict(raw), transformers_config(raw)
    head_dim = getattr(theirs, "head_dim", None) or theirs.hidden_size // theirs.num_attention_heads
    assert (ours.num_kv_heads, ours.head_dim, ours.rms_norm_eps, ours.max_position_embeddings,
            ours.tie_word_embeddings, ours.rope.theta) == (
        theirs.num_key_value_heads, head_dim, theirs.rms_norm_eps, theirs.max_position_embeddings,
        theirs.tie_word_embeddings, theirs.rope_parameters["rope_theta"])


def test_every_parsed_architecture_has_a_builder():
    from deepinfer.model.architectures import ARCHITECTURES
    from deepinfer.model.config import SUPPORTED_ARCHITECTURES

    assert set(ARCHITECTURES) == set(SUPPORTED_ARCHITECTURES)
