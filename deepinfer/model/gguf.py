"""Reading GGUF files (llama.cpp's format) into Hugging Face terms.

`read_gguf` turns a .gguf file into what a Hugging Face model directory would
hold: a config.json dict, float32 tensors under HF parameter names (quantized
blocks dequantized with the `gguf` package, or kept in block form for the
quantized kernels of model/quant), and the tokenizer files rebuilt
from GGUF metadata. `write_hf_directory` saves that as a directory. Tensor
transforms follow transformers' GGUF loader, so both load the same weights:
llama.cpp's converter permutes q/k rows of Llama-architecture models for its
interleaved rotary layout, and that permutation is undone here.

Knows nothing about the forward pass; `load_model` calls `read_gguf`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model.quant.formats import FORMATS, Unpacked
from deepinfer.model.quant.gguf_file import check_gguf_tensors
from deepinfer.model.quant.source import unpack_gguf_tensor
from deepinfer.tokenizer.gguf_vocab import gguf_tokenizer_files, open_gguf

# GGUF architecture -> (HF architecture class, model_type)
_ARCHITECTURES = {
    "llama": ("LlamaForCausalLM", "llama"),
    "mistral": ("MistralForCausalLM", "mistral"),
    "qwen2": ("Qwen2ForCausalLM", "qwen2"),
    "qwen3": ("Qwen3ForCausalLM", "qwen3"),
}
# Architectures whose q/k rows llama.cpp permuted (its rotary pairs interleaved dims).
_PERMUTED_QK = {"llama", "mistral"}

_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_BLOCK_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_BLOCK_RE = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


@dataclass
class GGUFModel:
    """A GGUF file's contents in Hugging Face form."""

    config: dict[str, Any]  # config.json contents
    state_dict: dict[str, torch.Tensor]  # HF parameter names, float32
    tokenizer_json: str
    tokenizer_config: dict[str, Any]
    generation_config: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    # With keep_quantized: the block-quantized tensors, by HF name, instead of float32 ones in state_dict.
    quantized: dict[str, Unpacked] = field(default_factory=dict)


def hf_tensor_name(gguf_name: str) -> str | None:
    """The HF parameter name of a GGUF tensor, or None for one HF has no place for."""
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    match = _BLOCK_RE.fullmatch(gguf_name)
    if match and match.group(2) in _BLOCK_NAMES:
        layer, part, kind = match.groups()
        return f"model.layers.{layer}.{_BLOCK_NAMES[part]}.{kind}"
    return None


def unpermute_qk(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row permutation (convert_hf_to_gguf.py `permute`).

    weight: [num_heads * head_dim, ...] (a weight or a bias). llama.cpp stored each
    head's rows as (head_dim/2, 2) pairs; HF's rotate_half wants (2, head_dim/2).
    """
    half = weight.shape[0] // num_heads // 2
    rows = weight.reshape(num_heads, half, 2, *weight.shape[1:])
    return rows.swapaxes(1, 2).reshape(weight.shape)


def _config(metadata: dict[str, Any], tensor_names: set[str], source: str,
            rope_factors: np.ndarray | None = None) -> dict[str, Any]:
    arch = metadata.get("general.architecture")
    if arch not in _ARCHITECTURES:
        raise ModelLoadError(
            f"GGUF file {source} holds a '{arch}' model (general.architecture); deepinfer reads "
            f"GGUF models of the architectures {sorted(_ARCHITECTURES)}. Use a Hugging Face "
            "directory of this model instead.")

    def get(key: str, default: Any = ModelLoadError) -> Any:
        value = metadata.get(f"{arch}.{key}", default)
        if value is ModelLoadError:
            raise ModelLoadError(f"GGUF file {source} lacks the metadata field '{arch}.{key}', "
                                 "which the model config needs. Re-convert it with a recent llama.cpp.")
        return value

    hf_class, model_type = _ARCHITECTURES[arch]
    heads = get("attention.head_count")
    hidden = get("embedding_length")
    tokens = metadata.get("tokenizer.ggml.tokens") or []
    config = {
        "architectures": [hf_class], "model_type": model_type,
        "hidden_size": hidden, "intermediate_size": get("feed_forward_length"),
        "num_hidden_layers": get("block_count"), "num_attention_heads": heads,
        "num_key_value_heads": get("attention.head_count_kv", heads),
        "head_dim": get("attention.key_length", None) or get("rope.dimension_count", None)
        or hidden // heads,
        "rms_norm_eps": get("attention.layer_norm_rms_epsilon"),
        "rope_theta": get("rope.freq_base", 10000.0),
        "max_position_embeddings": get("context_length"),
        "vocab_size": get("vocab_size", None) or len(tokens),
        "hidden_act": "silu",
        "tie_word_embeddings": "output.weight" not in tensor_names,
        "torch_dtype": "float32",
    }
    rope_scaling = _rope_scaling(metadata, arch, rope_factors, config, source)
    if rope_scaling is not None:
        config["rope_scaling"] = rope_scaling
    if model_type in ("llama", "mistral"):
        config["attention_bias"] = "blk.0.attn_q.bias" in tensor_names
        config["mlp_bias"] = False
    if model_type == "mistral" and isinstance(get("attention.sliding_window", None), int):
        config["sliding_window"] = get("attention.sliding_window")
    for name, key in (("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
                      ("pad_token_id", "padding_token_id")):
        if isinstance(metadata.get(f"tokenizer.ggml.{key}"), int):
            config[name] = metadata[f"tokenizer.ggml.{key}"]
    return config


# Llama 3.1/3.2's rope scaling constants; llama.cpp stores only the per-frequency factors they
# produce (the rope_freqs tensor), so these are checked against the tensor, not assumed.
_LLAMA3_ROPE = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def llama3_rope_factors(inv_freq: np.ndarray, factor: float, low_freq_factor: float,
                        high_freq_factor: float, original_max_position_embeddings: int) -> np.ndarray:
    """llama.cpp's rope_freqs for Llama 3 scaling: HF's scaled inv_freq == inv_freq / factors."""
    low_wavelen = original_max_position_embeddings / low_freq_factor
    high_wavelen = original_max_position_embeddings / high_freq_factor
    wavelen = 2 * np.pi / inv_freq
    smooth = (original_max_position_embeddings / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    medium = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < high_wavelen, 1.0, np.where(wavelen > low_wavelen, factor, medium))


def _rope_scaling(metadata: dict[str, Any], arch: str, rope_factors: np.ndarray | None,
                  config: dict[str, Any], source: str) -> dict[str, Any] | None:
    """HF rope_scaling from rope.scaling.* metadata or llama.cpp's rope_freqs tensor."""
    kind = metadata.get(f"{arch}.rope.scaling.type")
    if rope_factors is not None:
        dim = config["head_dim"]
        inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
        factor = float(rope_factors.max())
        expected = llama3_rope_factors(inv_freq, factor, **_LLAMA3_ROPE)
        if rope_factors.shape == expected.shape and np.allclose(rope_factors, expected, rtol=1e-5, atol=0):
            return {"rope_type": "llama3", "factor": factor, **_LLAMA3_ROPE}
        raise ModelLoadError(f"GGUF file {source} has a rope_freqs tensor that is not Llama 3's rope "
                             "scaling; deepinfer cannot express it. Use the model's Hugging Face directory.")
    if kind in (None, "none"):
        return None
    if kind == "linear" and isinstance(metadata.get(f"{arch}.rope.scaling.factor"), float):
        return {"rope_type": "linear", "factor": metadata[f"{arch}.rope.scaling.factor"]}
    raise ModelLoadError(f"GGUF file {source} uses '{kind}' rope scaling ({arch}.rope.scaling.type), "
                         "which deepinfer does not read from GGUF; use the model's Hugging Face directory.")


def _read_tensor(tensor, source: str) -> np.ndarray:
    """Dequantized float32 values in HF (row-major) shape."""
    from gguf.quants import dequantize

    # tensor.shape is ggml order (fastest dim first); numpy/HF order is the reverse.
    shape = tuple(int(n) for n in reversed(tensor.shape.tolist()))
    try:
        return np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32).reshape(shape)
    except Exception as exc:  # truncated data, unknown quantization type
        raise ModelLoadError(f"GGUF file {source}: tensor '{tensor.name}' cannot be read "
                             f"({type(exc).__name__}: {exc}); the file is corrupt, truncated or "
                             "uses a quantization the gguf package does not know.") from exc


def _state_dict(reader, config: dict[str, Any], source: str, progress: Callable[[int, int], None] | None,
                quantized: dict[str, Unpacked] | None = None) -> dict[str, torch.Tensor]:
    """Float32 HF tensors; with `quantized`, the block-quantized ones go there in block form."""
    permute = config["model_type"] in _PERMUTED_QK
    state: dict[str, torch.Tensor] = {}
    for index, tensor in enumerate(reader.tensors):
        name = hf_tensor_name(tensor.name)
        if tensor.name == "rope_freqs.weight":  # became config["rope_scaling"]
            continue
        if name is None:
            raise ModelLoadError(f"GGUF file {source} holds the tensor '{tensor.name}', which has no "
                                 f"place in a {config['architectures'][0]}; the file does not match "
                                 "its architecture.")
        if quantized is not None and tensor.tensor_type.name in FORMATS:
            quantized[name] = _quantized_tensor(tensor, name, config, permute, source)
            if progress is not None:
                progress(index + 1, len(reader.tensors))
            continue
        weight = _read_tensor(tensor, source)
        if permute and ".self_attn.q_proj." in name:
            weight = unpermute_qk(weight, config["num_attention_heads"])
        elif permute and ".self_attn.k_proj." in name:
            weight = unpermute_qk(weight, config["num_key_value_heads"])
        state[name] = torch.from_numpy(np.require(weight, requirements=["C", "W"]))  # F32 ones are read-only memmaps
        if progress is not None:
            progress(index + 1, len(reader.tensors))
    return state


def _quantized_tensor(tensor, name: str, config: dict[str, Any], permute: bool, source: str) -> Unpacked:
    weight = unpack_gguf_tensor(tensor, source)
    for part, heads in (("q_proj", "num_attention_heads"), ("k_proj", "num_key_value_heads")):
        if permute and f".self_attn.{part}." in name:
            weight = weight.take_rows(unpermute_qk(np.arange(weight.shape[0]), config[heads]))
    return weight


def read_gguf(path: str | Path, progress: Callable[[int, int], None] | None = None,
              keep_quantized: bool = False) -> GGUFModel:
    """Read a .gguf file: config, dequantized float32 HF tensors and tokenizer files.

    progress, if given, is called as progress(tensors_done, tensors_total) after each tensor.
    keep_quantized: block-quantized tensors go to `quantized` as they are (a type deepinfer cannot
    run quantized is refused); the tensor table is checked before any data is read either way.
    """
    path = Path(path)
    if path.is_file():
        check_gguf_tensors(path, quantized=keep_quantized)
    reader, metadata = open_gguf(path)
    tensors = {t.name: t for t in reader.tensors}
    rope_factors = (_read_tensor(tensors["rope_freqs.weight"], str(path))
                    if "rope_freqs.weight" in tensors else None)
    config = _config(metadata, set(tensors), str(path), rope_factors)
    files = gguf_tokenizer_files(metadata, str(path))
    quantized: dict[str, Unpacked] | None = {} if keep_quantized else None
    state = _state_dict(reader, config, str(path), progress, quantized)
    present = set(state) | set(quantized or {})
    missing = [n for n in ("model.embed_tokens.weight", "model.norm.weight") if n not in present]
    if missing:
        raise ModelLoadError(f"GGUF file {path} lacks the tensors {missing}; the file is incomplete.")
    generation_config = {"eos_token_id": sorted(files.eos_token_ids, key=_eos_order(config))}
    for key in ("bos_token_id", "pad_token_id"):
        if key in config:
            generation_config[key] = config[key]
    return GGUFModel(config=config, state_dict=state, tokenizer_json=files.tokenizer_json,
                     tokenizer_config=files.tokenizer_config, generation_config=generation_config,
                     source=str(path), quantized=quantized or {})


def _eos_order(config: dict[str, Any]) -> Callable[[int], tuple[int, int]]:
    # The config's own eos first (transformers treats the first as the primary one).
    return lambda i: (i != config.get("eos_token_id"), i)


def write_hf_directory(model: GGUFModel, out_dir: str | Path) -> Path:
    """Save a GGUFModel as a Hugging Face model directory (safetensors + tokenizer files)."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict.items()}, str(out / "model.safetensors"),
              metadata={"format": "pt"})
    (out / "tokenizer.json").write_text(model.tokenizer_json, encoding="utf-8")
    for name, data in (("config.json", model.config), ("tokenizer_config.json", model.tokenizer_config),
                       ("generation_config.json", model.generation_config)):
        (out / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    # safetensors creates its file 0600; give it the umask-derived mode of the files above so a
    # shared cache directory stays readable.
    os.chmod(out / "model.safetensors", (out / "config.json").stat().st_mode & 0o777)
    return out
