"""A model's shape, read from a Hugging Face config.json dict into typed, frozen dataclasses.

Owns the meaning of every config field the supported architectures use, with the
defaults transformers 5.x applies when a field is absent, and precise errors
(`ModelLoadError` naming the field and the file) when a needed field is missing or
has the wrong type. Knows nothing about weights or tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deepinfer.errors import ModelLoadError
from deepinfer.model.deepseek_v4_config import DeepseekV4Config, parse_deepseek_v4
from deepinfer.model.rope import RopeConfig, parse_rope, yarn_get_mscale

LLAMA_STYLE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")
DEEPSEEK_STYLE = ("DeepseekV3ForCausalLM",)
DEEPSEEK_V4_STYLE = ("DeepseekV4ForCausalLM",)
SUPPORTED_ARCHITECTURES = LLAMA_STYLE + DEEPSEEK_STYLE + DEEPSEEK_V4_STYLE


@dataclass(frozen=True)
class MLAConfig:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv, decoupled rope part."""

    q_lora_rank: int | None  # None: a plain q_proj
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoEConfig:
    """DeepSeek-V3 mixture of experts: sigmoid routing, group-limited top-k, shared experts."""

    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    num_shared_experts: int
    num_groups: int
    topk_groups: int
    norm_topk_prob: bool
    routed_scaling_factor: float
    first_k_dense_replace: int  # layers below this index use a dense MLP


@dataclass(frozen=True)
class ModelConfig:
    """Everything the forward pass needs to know about a model's shape.

    For the KV cache: every layer stores keys [T, num_kv_heads, head_dim] and
    values [T, num_kv_heads, v_head_dim]. MLA models are expanded per head
    (num_kv_heads = num_heads, head_dim = qk_nope + qk_rope).
    """

    architecture: str
    vocab_size: int  # rows of the embedding = width of the logits
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    hidden_act: str
    tie_word_embeddings: bool
    max_position_embeddings: int
    rope: RopeConfig
    softmax_scale: float
    sliding_window: int | None  # the window of sliding layers; None when no layer slides
    layer_sliding_windows: tuple[int | None, ...]  # per layer
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3: RMSNorm over each head of q and k
    mla: MLAConfig | None = None
    moe: MoEConfig | None = None
    deepseek_v4: DeepseekV4Config | None = None  # DeepSeek-V4: its own attention, cache and MoE
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "config.json") -> ModelConfig:
        return parse_config(raw, source)


class _Fields:
    """Typed access to config fields; every failure names the field and the file."""

    def __init__(self, raw: dict[str, Any], source: str) -> None:
        self.raw, self.source = raw, source

    def fail(self, field: str, problem: str) -> ModelLoadError:
        return ModelLoadError(f"{self.source}: field '{field}' {problem}. Check the model's config.json "
                              "(it must come from a supported Hugging Face model).")

    def _check(self, field: str, value: Any, kind: type) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if kind is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(field, f"must be {kind.__name__}, got {value!r}")
        return value

    def required(self, field: str, kind: type, positive: bool = False) -> Any:
        if self.raw.get(field) is None:
            raise self.fail(field, "is missing")
        value = self._check(field, self.raw[field], kind)
        if positive and value <= 0:
            raise self.fail(field, f"must be positive, got {value!r}")
        return value

    def optional(self, field: str, kind: type, default: Any) -> Any:
        value = self.raw.get(field)
        return default if value is None else self._check(field, value, kind)

    def nullable(self, field: str, kind: type, default: Any) -> Any:
        """Absent -> default; present as null -> None (e.g. Mistral's sliding_window: null)."""
        if field not in self.raw:
            return default
        return None if self.raw[field] is None else self._check(field, self.raw[field], kind)


def parse_config(raw: dict[str, Any], source: str = "config.json") -> ModelConfig:
    if not isinstance(raw, dict):
        raise ModelLoadError(f"{source}: expected a JSON object, got {type(raw).__name__}.")
    f = _Fields(raw, source)
    archs = raw.get("architectures")
    if not archs or not isinstance(archs, list) or not isinstance(archs[0], str):
        raise f.fail("architectures", "is missing (expected e.g. [\"LlamaForCausalLM\"])")
    arch = archs[0]
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ModelLoadError(f"{source}: architecture '{arch}' is not supported. Supported architectures: "
                             f"{', '.join(SUPPORTED_ARCHITECTURES)}.")
    quantization = raw.get("quantization_config")
    if quantization:
        method = quantization.get("quant_method", "?") if isinstance(quantization, dict) else quantization
        raise f.fail("quantization_config", f"declares quantized weights ({method}); only float checkpoints "
                                            "(float32/bfloat16/float16 safetensors) or GGUF files are supported")
    if f.optional("hidden_act", str, "silu") not in ("silu", "swish"):
        raise f.fail("hidden_act", f"is '{raw['hidden_act']}'; only 'silu' (SwiGLU) is supported")
    if arch in DEEPSEEK_V4_STYLE:
        return _deepseek_v4(f, arch)
    common = dict(
        architecture=arch,
        vocab_size=f.required("vocab_size", int, positive=True),
        hidden_size=f.required("hidden_size", int, positive=True),
        num_layers=f.required("num_hidden_layers", int, positive=True),
        num_heads=f.required("num_attention_heads", int, positive=True),
        intermediate_size=f.required("intermediate_size", int, positive=True),
        rms_norm_eps=f.optional("rms_norm_eps", float, 1e-6),
        hidden_act="silu",
        tie_word_embeddings=f.optional("tie_word_embeddings", bool, False),
        bos_token_id=raw["bos_token_id"] if type(raw.get("bos_token_id")) is int else None,  # informational
        eos_token_ids=_eos_ids(f),
    )
    if arch in DEEPSEEK_STYLE:
        return _deepseek(f, common)
    return _llama_style(f, arch, common)


def _eos_ids(f: _Fields) -> tuple[int, ...]:
    value = f.raw.get("eos_token_id")
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    return tuple(f._check("eos_token_id", v, int) for v in values)


def _llama_style(f: _Fields, arch: str, common: dict[str, Any]) -> ModelConfig:
    num_heads, num_layers = common["num_heads"], common["num_layers"]
    # Absent: transformers' class default (Mistral 8, Qwen2/Qwen3 32); null: num_attention_heads.
    default_kv = {"MistralForCausalLM": 8, "Qwen2ForCausalLM": 32, "Qwen3ForCausalLM": 32}.get(arch, num_heads)
    num_kv_heads = f.nullable("num_key_value_heads", int, default_kv)
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    if num_kv_heads <= 0 or num_heads % num_kv_heads:
        raise f.fail("num_key_value_heads", f"must divide num_attention_heads ({num_heads}), got {num_kv_heads}")
    default_head_dim = 128 if arch == "Qwen3ForCausalLM" else common["hidden_size"] // num_heads
    head_dim = f.optional("head_dim", int, default_head_dim)
    max_pos = f.optional("max_position_embeddings", int, _DEFAULT_MAX_POS[arch])
    attention_bias = f.optional("attention_bias", bool, False)
    biases = {
        "LlamaForCausalLM": (attention_bias, attention_bias, f.optional("mlp_bias", bool, False)),
        "MistralForCausalLM": (False, False, False),
        "Qwen2ForCausalLM": (True, False, False),
        "Qwen3ForCausalLM": (attention_bias, attention_bias, False),
    }[arch]
    windows = _layer_windows(f, arch, num_layers)
    sliding = next((w for w in windows if w is not None), None)
    return ModelConfig(
        **common, num_kv_heads=num_kv_heads, head_dim=head_dim, v_head_dim=head_dim,
        max_position_embeddings=max_pos, rope=parse_rope(f, head_dim, max_pos, interleaved=False),
        softmax_scale=head_dim ** -0.5, sliding_window=sliding, layer_sliding_windows=windows,
        qkv_bias=biases[0], o_bias=biases[1], mlp_bias=biases[2], qk_norm=arch == "Qwen3ForCausalLM")


_DEFAULT_MAX_POS = {"LlamaForCausalLM": 2048, "MistralForCausalLM": 4096 * 32,
                    "Qwen2ForCausalLM": 32768, "Qwen3ForCausalLM": 32768, "DeepseekV3ForCausalLM": 4096}


def _layer_windows(f: _Fields, arch: str, num_layers: int) -> tuple[int | None, ...]:
    """Per-layer sliding window, exactly as transformers 5.x decides it."""
    if arch == "LlamaForCausalLM":
        return (None,) * num_layers
    window = f.nullable("sliding_window", int, 4096)
    if arch == "MistralForCausalLM":  # every layer slides when the window is set
        return (window,) * num_layers
    # Qwen2/Qwen3: the window only counts with use_sliding_window, and then only for
    # "sliding_attention" layers (by default the layers from max_window_layers on).
    if not f.optional("use_sliding_window", bool, False):
        window = None
    layer_types = f.raw.get("layer_types")
    if layer_types is None:
        first = f.optional("max_window_layers", int, 28)
        layer_types = ["sliding_attention" if window is not None and i >= first else "full_attention"
                       for i in range(num_layers)]
    if (not isinstance(layer_types, list) or len(layer_types) != num_layers
            or any(t not in ("full_attention", "sliding_attention") for t in layer_types)):
        raise f.fail("layer_types", f"must list 'full_attention'/'sliding_attention' for each of "
                                    f"the {num_layers} layers")
    return tuple(window if t == "sliding_attention" else None for t in layer_types)


def _deepseek(f: _Fields, common: dict[str, Any]) -> ModelConfig:
    num_heads = common["num_heads"]
    mla = MLAConfig(
        q_lora_rank=f.nullable("q_lora_rank", int, 1536),
        kv_lora_rank=f.required("kv_lora_rank", int, positive=True),
        qk_nope_head_dim=f.required("qk_nope_head_dim", int, positive=True),
        qk_rope_head_dim=f.required("qk_rope_head_dim", int, positive=True),
        v_head_dim=f.required("v_head_dim", int, positive=True),
    )
    num_experts = f.required("n_routed_experts", int, positive=True)
    num_groups = f.optional("n_group", int, 8)  # defaults: DeepseekV3Config's
    moe = MoEConfig(
        num_experts=num_experts,
        num_experts_per_tok=f.required("num_experts_per_tok", int, positive=True),
        moe_intermediate_size=f.required("moe_intermediate_size", int, positive=True),
        num_shared_experts=f.optional("n_shared_experts", int, 1),
        num_groups=num_groups,
        topk_groups=f.optional("topk_group", int, 4),
        norm_topk_prob=f.optional("norm_topk_prob", bool, True),
        routed_scaling_factor=f.optional("routed_scaling_factor", float, 2.5),
        first_k_dense_replace=f.optional("first_k_dense_replace", int, 3),
    )
    if num_experts % num_groups:
        raise f.fail("n_group", f"must divide n_routed_experts ({num_experts}), got {num_groups}"
                                f"{'' if 'n_group' in f.raw else ' (the default)'}")
    if not 1 <= moe.topk_groups <= num_groups:
        raise f.fail("topk_group", f"must be between 1 and n_group ({num_groups}), got {moe.topk_groups}")
    if moe.num_experts_per_tok > num_experts:
        raise f.fail("num_experts_per_tok", f"exceeds n_routed_experts ({num_experts})")
    max_pos = f.optional("max_position_embeddings", int, 4096)
    # transformers sets head_dim = qk_rope_head_dim for DeepSeek-V3: rope covers only that part.
    rope = parse_rope(f, mla.qk_rope_head_dim, max_pos, interleaved=bool(f.nullable("rope_interleave", bool, True)))
    qk_head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    return ModelConfig(
        **common, num_kv_heads=num_heads, head_dim=qk_head_dim, v_head_dim=mla.v_head_dim,
        max_position_embeddings=max_pos, rope=rope, softmax_scale=_mla_softmax_scale(rope, qk_head_dim),
        sliding_window=None, layer_sliding_windows=(None,) * common["num_layers"],
        qkv_bias=f.optional("attention_bias", bool, False), o_bias=f.optional("attention_bias", bool, False),
        mla=mla, moe=moe)


def _deepseek_v4(f: _Fields, arch: str) -> ModelConfig:
    """The common fields of a V4 model; its attention and MoE read only `deepseek_v4`."""
    v4 = parse_deepseek_v4(f)
    return ModelConfig(
        architecture=arch, vocab_size=f.required("vocab_size", int, positive=True), hidden_size=v4.hidden_size,
        num_layers=v4.num_layers, num_heads=v4.num_heads, num_kv_heads=1, head_dim=v4.head_dim,
        v_head_dim=v4.head_dim, intermediate_size=v4.moe_intermediate_size, rms_norm_eps=v4.rms_norm_eps,
        hidden_act="silu", tie_word_embeddings=f.optional("tie_word_embeddings", bool, False),
        max_position_embeddings=f.optional("max_position_embeddings", int, 1048576), rope=v4.main_rope,
        softmax_scale=v4.head_dim ** -0.5, sliding_window=v4.sliding_window,
        layer_sliding_windows=(v4.sliding_window,) * v4.num_layers, deepseek_v4=v4,
        bos_token_id=f.raw["bos_token_id"] if type(f.raw.get("bos_token_id")) is int else None,
        eos_token_ids=_eos_ids(f))


def _mla_softmax_scale(rope: RopeConfig, qk_head_dim: int) -> float:
    """transformers' yarn_apply_mscale: yarn's mscale_all_dim also sharpens the softmax."""
    scale = qk_head_dim ** -0.5
    if rope.rope_type != "default" and rope.mscale_all_dim:
        mscale = yarn_get_mscale(rope.factor or 1.0, rope.mscale_all_dim)
        scale = scale * mscale * mscale
    return scale
