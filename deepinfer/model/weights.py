"""Checkpoint tensors by Hugging Face name: safetensors files (one or sharded) or an in-memory dict.

Owns lookup, shape checks, dtype/device conversion and the bookkeeping that turns
missing, mis-shaped, unexpected or unreadable tensors into `ModelLoadError`s that
name the tensor and the file. Knows nothing about architectures.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from deepinfer.errors import ModelLoadError

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
# Low-precision float formats whose checkpoints scale blocks of weights by separate tensors.
QUANTIZED_DTYPES = frozenset(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                                         "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2")
                             if hasattr(torch, n))


class TensorSource:
    """Tensors by name, each taken at most once, converted to `dtype` on `device`."""

    def __init__(self, locations: dict[str, str], dtype: torch.dtype, device: torch.device | str,
                 where: str) -> None:
        self.locations = locations  # tensor name -> file it lives in (for messages and reading)
        self.dtype, self.device, self.where = dtype, torch.device(device), where
        self.taken: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.locations

    def names(self) -> list[str]:
        return list(self.locations)

    def take(self, name: str, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        if name not in self.locations:
            raise ModelLoadError(f"{self.where}: tensor '{name}' is missing (expected shape {list(shape)}). "
                                 "The weights do not match config.json; re-export the model.")
        tensor = self._read(name)
        if tuple(tensor.shape) != tuple(shape):
            raise ModelLoadError(f"{self.locations[name]}: tensor '{name}' has shape {list(tensor.shape)}, "
                                 f"expected {list(shape)} from config.json. The weights do not match the config.")
        if tensor.dtype in QUANTIZED_DTYPES:  # converting would drop the block scales stored beside it
            raise ModelLoadError(f"{self.locations[name]}: tensor '{name}' holds {str(tensor.dtype).removeprefix('torch.')} "
                                 "weights (an FP8/FP4 checkpoint); only float checkpoints (float32/bfloat16/"
                                 "float16 safetensors) or GGUF files are supported: load a bfloat16 export.")
        self.taken.add(name)
        return tensor.to(device=self.device, dtype=dtype or self.dtype)

    def take_quantized(self, name: str, shape: tuple[int, ...]):
        """The tensor as a block-quantized weight (model/quant's Unpacked), or None where it is
        taken as a float tensor; plain sources hold no quantized weights."""
        return None

    def check_all_taken(self, ignore: Callable[[str], bool] | None = None) -> None:
        extra = sorted(n for n in self.locations
                       if n not in self.taken and not (ignore is not None and ignore(n)))
        if extra:
            shown = ", ".join(f"'{n}'" for n in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            raise ModelLoadError(f"{self.locations[extra[0]]}: unexpected tensor(s) {shown} that the "
                                 "architecture in config.json does not use. The weights do not match the config.")

    def _read(self, name: str) -> torch.Tensor:
        raise NotImplementedError

    def close(self) -> None:
        pass


class DictSource(TensorSource):
    """Tensors already in memory (e.g. dequantized from a GGUF file)."""

    def __init__(self, tensors: dict[str, torch.Tensor], dtype: torch.dtype, device: torch.device | str,
                 where: str) -> None:
        super().__init__({name: where for name in tensors}, dtype, device, where)
        self.tensors = tensors

    def _read(self, name: str) -> torch.Tensor:
        return self.tensors[name]


class SafetensorsSource(TensorSource):
    """One `model.safetensors`, or the shards listed by `model.safetensors.index.json`."""

    def __init__(self, directory: Path, dtype: torch.dtype, device: torch.device | str) -> None:
        files = _shard_files(directory)
        self.handles = {}
        locations: dict[str, str] = {}
        for file in files:
            handle = _open(file)
            self.handles[str(file)] = handle
            for name in handle.keys():
                locations[name] = str(file)
        super().__init__(locations, dtype, device, str(directory))

    def _read(self, name: str) -> torch.Tensor:
        file = self.locations[name]
        try:
            return self.handles[file].get_tensor(name)
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise ModelLoadError(f"{file}: cannot read tensor '{name}' ({e}). The file is corrupt or "
                                 "truncated; download it again.") from None

    def close(self) -> None:
        self.handles.clear()


def _shard_files(directory: Path) -> list[Path]:
    index = directory / INDEX_NAME
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            names = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ModelLoadError(f"{index}: not a valid safetensors index ({e}). Download it again.") from None
        files = [directory / n for n in names]
        for file in files:
            if not file.is_file():
                raise ModelLoadError(f"{file}: shard listed in {index.name} is missing. Download the model again.")
        return files
    if (directory / SINGLE_NAME).is_file():
        return [directory / SINGLE_NAME]
    files = sorted(directory.glob("model*.safetensors"))
    if not files:
        raise ModelLoadError(f"{directory}: no {SINGLE_NAME} or {INDEX_NAME} found. Point to a Hugging Face "
                             "model directory with safetensors weights, or to a .gguf file.")
    return files


def _open(file: Path):
    try:
        return safe_open(str(file), framework="pt", device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise ModelLoadError(f"{file}: not a readable safetensors file ({e}). The file is corrupt or "
                             "truncated; download it again.") from None
