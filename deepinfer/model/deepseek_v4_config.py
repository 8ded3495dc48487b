"""DeepSeek-V4's shape, read from a Hugging Face config.json the way transformers 5.x reads it.

Owns every V4-specific field: the per-layer attention schedule (sliding window only,
compressed sparse attention = CSA, heavily compressed attention = HCA) and compression
rates, the Lightning Indexer, hyper-connections, the per-layer MoE schedule (hash or
top-k routing) and the two rotary embeddings ("main" for sliding layers, "compress" for
CSA/HCA layers and their compressors). The legacy fields older checkpoints ship
(`compress_ratios`, `compress_rate_csa`/`_hca`, `num_hash_layers`, `qk_rope_head_dim`,
a flat yarn `rope_parameters`/`rope_scaling`) fold in as transformers folds them.

`f` is config.py's field reader (typed access, errors that name the field and the file);
this module never imports config.py, which builds its `ModelConfig` from the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deepinfer.model.rope import RopeConfig, parse_rope

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
LAYER_TYPES = (SLIDING, CSA, HCA)
HASH_MOE, TOPK_MOE = "hash_moe", "moe"
MLP_LAYER_TYPES = (HASH_MOE, TOPK_MOE)
SCORING_FUNCS = ("sqrtsoftplus", "sigmoid")  # transformers' ACT2FN has no "softmax" either
V4_ROPE_TYPES = ("default", "yarn")

_LEGACY_RATIO_TO_TYPE = {0: SLIDING, 4: CSA, 128: HCA}  # transformers' fixed map for `compress_ratios`
_DEFAULT_RATES = {CSA: 4, HCA: 128}
_DEFAULT_HASH_LAYERS = 3
_DEFAULT_PARTIAL_ROTARY = 64 / 512


@dataclass(frozen=True)
class DeepseekV4Config:
    """Everything V4's forward pass needs beyond the common `ModelConfig` fields."""

    num_layers: int
    hidden_size: int
    num_heads: int
    head_dim: int  # one shared K=V head of this width; queries have num_heads of them
    rope_dim: int  # trailing channels of each head that get (interleaved) rotary
    q_lora_rank: int
    o_groups: int  # grouped output projection: heads split into this many groups
    o_lora_rank: int  # per-group width after the first output projection
    sliding_window: int  # every layer attends the last `sliding_window` tokens (itself included)
    layer_types: tuple[str, ...]  # per layer, one of LAYER_TYPES
    compress_rates: tuple[int, ...]  # per layer: tokens per compressed entry (0 for sliding layers)
    index_heads: int
    index_head_dim: int
    index_topk: int  # compressed entries each query of a CSA layer keeps
    hc_mult: int  # hyper-connection streams
    hc_sinkhorn_iters: int
    hc_eps: float
    rms_norm_eps: float
    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int  # routed experts and the shared expert
    mlp_layer_types: tuple[str, ...]  # per layer, one of MLP_LAYER_TYPES
    scoring_func: str  # router activation, one of SCORING_FUNCS
    routed_scaling_factor: float
    swiglu_limit: float  # clamp of the gate (above) and up (both sides) pre-activations
    main_rope: RopeConfig  # sliding layers
    compress_rope: RopeConfig  # CSA/HCA layers, their compressors and the indexer


def parse_deepseek_v4(f: Any) -> DeepseekV4Config:
    """`f`: config.py's `_Fields` over config.json. Raises ModelLoadError naming the field."""
    num_layers = f.required("num_hidden_layers", int, positive=True)
    num_heads = f.required("num_attention_heads", int, positive=True)
    head_dim = f.required("head_dim", int, positive=True)
    if f.optional("mlp_bias", bool, False):
        raise f.fail("mlp_bias", "is true; DeepSeek-V4 checkpoints have no MLP biases and deepinfer "
                                 "does not support them")
    layer_types = _layer_types(f, num_layers)
    rates = _compress_rates(f)
    rope_dim = _rope_dim(f, head_dim)
    main_rope, compress_rope = _ropes(f, rope_dim)
    o_groups = _positive(f, "o_groups", 8)
    if (num_heads * head_dim) % o_groups:
        raise f.fail("o_groups", f"must divide num_attention_heads * head_dim ({num_heads * head_dim}), "
                                 f"got {o_groups}")
    index_head_dim = _positive(f, "index_head_dim", 128)
    if index_head_dim < rope_dim:
        raise f.fail("index_head_dim", f"must be at least the rotary width {rope_dim}, got {index_head_dim}")
    num_experts = f.required("n_routed_experts", int, positive=True)
    per_tok = f.required("num_experts_per_tok", int, positive=True)
    if per_tok > num_experts:
        raise f.fail("num_experts_per_tok", f"exceeds n_routed_experts ({num_experts})")
    scoring = f.optional("scoring_func", str, "sqrtsoftplus")
    if scoring not in SCORING_FUNCS:
        raise f.fail("scoring_func", f"is {scoring!r}; supported: {', '.join(SCORING_FUNCS)}")
    return DeepseekV4Config(
        num_layers=num_layers, hidden_size=f.required("hidden_size", int, positive=True), num_heads=num_heads,
        head_dim=head_dim, rope_dim=rope_dim, q_lora_rank=_positive(f, "q_lora_rank", 1024), o_groups=o_groups,
        o_lora_rank=_positive(f, "o_lora_rank", 1024), sliding_window=_positive(f, "sliding_window", 128),
        layer_types=layer_types, compress_rates=tuple(0 if t == SLIDING else rates[t] for t in layer_types),
        index_heads=_positive(f, "index_n_heads", 64), index_head_dim=index_head_dim,
        index_topk=_positive(f, "index_topk", 512), hc_mult=_positive(f, "hc_mult", 4),
        hc_sinkhorn_iters=_positive(f, "hc_sinkhorn_iters", 20), hc_eps=f.optional("hc_eps", float, 1e-6),
        rms_norm_eps=f.optional("rms_norm_eps", float, 1e-6), num_experts=num_experts,
        num_experts_per_tok=per_tok, moe_intermediate_size=f.required("moe_intermediate_size", int, positive=True),
        mlp_layer_types=_mlp_layer_types(f, num_layers), scoring_func=scoring,
        routed_scaling_factor=f.optional("routed_scaling_factor", float, 1.5),
        swiglu_limit=f.optional("swiglu_limit", float, 10.0), main_rope=main_rope, compress_rope=compress_rope)


def _positive(f: Any, field: str, default: int) -> int:
    value = f.optional(field, int, default)
    if value <= 0:
        raise f.fail(field, f"must be positive, got {value!r}")
    return value


def _compress_rates(f: Any) -> dict[str, int]:
    rates = f.raw.get("compress_rates")
    if rates is None:
        rates = dict(_DEFAULT_RATES)
    elif not isinstance(rates, dict):
        raise f.fail("compress_rates", f"must be an object, got {rates!r}")
    rates = {**_DEFAULT_RATES, **rates}
    for legacy, kind in (("compress_rate_csa", CSA), ("compress_rate_hca", HCA)):
        if f.raw.get(legacy) is not None:
            rates[kind] = f.required(legacy, int)
    for kind in (CSA, HCA):
        if not isinstance(rates[kind], int) or isinstance(rates[kind], bool) or rates[kind] <= 0:
            raise f.fail("compress_rates", f"must give a positive integer rate for {kind!r}, got {rates[kind]!r}")
    return rates


def _layer_types(f: Any, num_layers: int) -> tuple[str, ...]:
    types = f.raw.get("layer_types")
    legacy = f.raw.get("compress_ratios")
    if types is None and legacy is not None:
        if not isinstance(legacy, list) or any(r not in _LEGACY_RATIO_TO_TYPE for r in legacy):
            raise f.fail("compress_ratios", f"must list ratios among {sorted(_LEGACY_RATIO_TO_TYPE)}, got {legacy!r}")
        types = [_LEGACY_RATIO_TO_TYPE[r] for r in legacy]
    if types is None:  # transformers' V4-Pro default: two HCA layers, then HCA/CSA alternating
        types = [HCA] * min(num_layers, 2) + [CSA if i % 2 else HCA for i in range(max(num_layers - 2, 0))]
    return _schedule(f, "layer_types", types, num_layers, LAYER_TYPES)


def _mlp_layer_types(f: Any, num_layers: int) -> tuple[str, ...]:
    types = f.raw.get("mlp_layer_types")
    if types is None:
        hashed = f.optional("num_hash_layers", int, _DEFAULT_HASH_LAYERS)
        types = [HASH_MOE] * min(num_layers, hashed) + [TOPK_MOE] * max(0, num_layers - hashed)
    return _schedule(f, "mlp_layer_types", types, num_layers, MLP_LAYER_TYPES)


def _schedule(f: Any, field: str, types: Any, num_layers: int, allowed: tuple[str, ...]) -> tuple[str, ...]:
    # transformers keeps the first num_hidden_layers entries (checkpoints list the MTP layers too).
    if not isinstance(types, list) or len(types) < num_layers or any(t not in allowed for t in types):
        raise f.fail(field, f"must list one of {', '.join(allowed)} for each of the {num_layers} layers, "
                            f"got {types!r}")
    return tuple(types[:num_layers])


def _rope_dim(f: Any, head_dim: int) -> int:
    """int(head_dim * partial_rotary_factor); the factor defaults to qk_rope_head_dim / head_dim, else 64/512."""
    if f.raw.get("partial_rotary_factor") is not None:
        partial = f.required("partial_rotary_factor", float)
    elif f.raw.get("qk_rope_head_dim") is not None:
        partial = f.required("qk_rope_head_dim", int) / head_dim
    else:
        partial = _DEFAULT_PARTIAL_ROTARY
    rope_dim = int(head_dim * partial)
    if rope_dim <= 0 or rope_dim % 2 or rope_dim > head_dim:
        raise f.fail("partial_rotary_factor", f"gives a rotary width of {rope_dim} channels of head_dim "
                                              f"{head_dim}; it must be even, positive and at most head_dim")
    return rope_dim


def _ropes(f: Any, rope_dim: int) -> tuple[RopeConfig, RopeConfig]:
    """The "main" and "compress" rotary parameters, nested or folded from a flat (yarn) dict."""
    params = f.raw.get("rope_parameters") or f.raw.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise f.fail("rope_parameters", f"must be an object, got {params!r}")
    if isinstance(params.get("main"), dict) and isinstance(params.get("compress"), dict):
        main, compress = params["main"], params["compress"]
    else:
        flat = {k: v for k, v in params.items() if k not in ("main", "compress")}
        main = {"rope_type": "default", "rope_theta": f.optional("rope_theta", float, 10000.0)}
        compress = {**flat, "rope_theta": f.optional("compress_rope_theta", float, 160000.0)}
        compress["rope_type"] = compress.get("rope_type", compress.get("type", "default"))
        if compress["rope_type"] == "yarn":
            # The V4 reference does not scale cos/sin by yarn's mscale unless the config says so.
            compress.setdefault("attention_factor", 1.0)
    max_pos = f.optional("max_position_embeddings", int, 1048576)
    return _one_rope(f, "main", main, rope_dim, max_pos), _one_rope(f, "compress", compress, rope_dim, max_pos)


def _one_rope(f: Any, label: str, params: dict, rope_dim: int, max_pos: int) -> RopeConfig:
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in V4_ROPE_TYPES:
        raise f.fail("rope_parameters", f"gives the {label!r} rotary rope_type {rope_type!r}; DeepSeek-V4 "
                                        f"supports {', '.join(V4_ROPE_TYPES)}")
    # The width comes from partial_rotary_factor (already in rope_dim); V4 reads every other
    # parameter from the sub-dict alone, so parse it as a config of its own.
    sub = {k: v for k, v in params.items() if k != "partial_rotary_factor"}
    raw = {"rope_parameters": sub, "max_position_embeddings": max_pos}
    return parse_rope(type(f)(raw, f"{f.source} (rope_parameters.{label})"), rope_dim, max_pos, interleaved=True)
