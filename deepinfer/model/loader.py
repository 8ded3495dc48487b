"""`load_model`: a Hugging Face model directory or a GGUF file -> a ready `Model`.

Owns finding config.json and the weights, building the architecture named by the
config, and making sure every checkpoint tensor was used exactly once. Errors a
user can fix are `ModelLoadError`s naming the file, field or tensor.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model.architectures import ARCHITECTURES
from deepinfer.model.config import ModelConfig, parse_config
from deepinfer.model.decoder import Model
from deepinfer.model.gguf import read_gguf
from deepinfer.model.quant.source import QUANTIZATIONS, QuantizedSource
from deepinfer.model.weights import DictSource, SafetensorsSource, TensorSource

DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def load_model(path: str | Path, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
               quantization: str | None = None) -> Model:
    """Load weights in `dtype` (activations follow; logits are always float32).

    quantization (model/quant/source.py): None, every weight in `dtype` (a GGUF's blocks
    dequantized); "gguf", a GGUF's quantized tensors kept as they are; "int8" / "int4", float
    projection and embedding weights also quantized on load."""
    if dtype not in DTYPES:
        raise ModelLoadError(f"dtype {dtype} is not supported; use one of {', '.join(map(str, DTYPES))}.")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ModelLoadError(f"quantization {quantization!r} is not supported; use one of "
                             f"{', '.join(QUANTIZATIONS)} or None.")
    if quantization is not None and torch.device(device).type != "cpu":
        raise ModelLoadError(f"quantized weights run on the CPU only, not on {device}; use quantization=None.")
    path = Path(path)
    if path.suffix.lower() == ".gguf":
        return _load_gguf(path, dtype, device, quantization)
    if not path.exists():
        raise ModelLoadError(f"{path}: no such model directory or file. Pass a Hugging Face model directory "
                             "(config.json + *.safetensors) or a .gguf file.")
    if not path.is_dir():
        raise ModelLoadError(f"{path}: not a model directory or a .gguf file.")
    config = parse_config(_read_json(path / "config.json"), str(path / "config.json"))
    source: TensorSource = SafetensorsSource(path, dtype, device)
    if quantization is not None:
        source = QuantizedSource(source, {}, quantization)
    try:
        return build_model(config, source)
    finally:
        source.close()


def build_model(config: ModelConfig, source: TensorSource) -> Model:
    """Build the config's architecture and take every tensor from `source`."""
    model = ARCHITECTURES[config.architecture](config, source.dtype, source.device)
    model.load(source)
    source.check_all_taken(ignore=_ignored_tensors(config))
    return model.eval()


def _ignored_tensors(config: ModelConfig) -> Callable[[str], bool]:
    """Checkpoint tensors that transformers skips too, so they are not 'unexpected'."""

    def ignored(name: str) -> bool:
        if "rotary_emb." in name:  # old exports store rotary inv_freq buffers
            return True
        if config.deepseek_v4 is not None and _V4_MTP.search(name):  # DeepSeek-V4's MTP layers
            return True
        # DeepSeek-V3 checkpoints carry multi-token-prediction layers after the last decoder layer.
        match = _LAYER.match(name)
        return config.mla is not None and match is not None and int(match.group(1)) >= config.num_layers

    return ignored


_LAYER = re.compile(r"model\.layers\.(\d+)\.")
_V4_MTP = re.compile(r"(^|\.)mtp\.")  # transformers' _keys_to_ignore_on_load_unexpected for V4


def _read_json(file: Path) -> dict[str, Any]:
    if not file.is_file():
        raise ModelLoadError(f"{file}: missing. A model directory needs the config.json of a Hugging Face model.")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ModelLoadError(f"{file}: not valid JSON ({e}).") from None


def _load_gguf(path: Path, dtype: torch.dtype, device: torch.device | str, quantization: str | None) -> Model:
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such GGUF file.")
    gguf = read_gguf(path, keep_quantized=quantization is not None)
    config = parse_config(gguf.config, f"{path} (config from GGUF metadata)")
    source: TensorSource = DictSource(gguf.state_dict, dtype, device, str(path))
    if quantization is not None:
        source = QuantizedSource(source, gguf.quantized, quantization)
    return build_model(config, source)
