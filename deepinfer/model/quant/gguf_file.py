"""A GGUF file's tensor table checked from its header alone, before any tensor data is mapped.

`check_gguf_tensors` parses the header (metadata skipped, tensor infos read) with plain file
reads and refuses, with a `ModelLoadError` naming the file, the tensor and what is wrong: a type
the load cannot use (quantized loads take only the formats of formats.py, plus float tensors), a
row length that is not a whole number of blocks, and data that runs past the end of the file
(a truncated download). gguf.GGUFReader would map the whole file and fail on the first short
tensor with a reshape error that names nothing. Layout: ggml's docs/gguf.md, version 2 and 3.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from deepinfer.errors import ModelLoadError
from deepinfer.model.quant.formats import FORMATS

# ggml_type -> (name, values per block, bytes per block), for the types GGUF files hold.
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}
FLOAT_TYPES = frozenset({"F32", "F16", "BF16", "F64"})
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_name: str
    shape: tuple[int, ...]      # ggml order: the row length first
    offset: int                 # from the start of the file
    nbytes: int


class _Header:
    def __init__(self, f: BinaryIO, source: str) -> None:
        self.f, self.source = f, source

    def read(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        raw = self.f.read(size)
        if len(raw) != size:
            raise ModelLoadError(f"GGUF file {self.source} ends inside its header: the file is truncated; "
                                 "download it again.")
        return struct.unpack("<" + fmt, raw)[0]

    def string(self) -> str:
        length = self.read("Q")
        raw = self.f.read(length)
        if len(raw) != length:
            raise ModelLoadError(f"GGUF file {self.source} ends inside its header: the file is truncated.")
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int):
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.read("I"), self.read("Q")
            if item in _SCALAR and item != _STRING:   # skipped whole: only general.alignment is read
                self.f.seek(count * struct.calcsize("<" + _SCALAR[item]), 1)
                return None
            return [self.value(item) for _ in range(count)]
        if kind not in _SCALAR:
            raise ModelLoadError(f"GGUF file {self.source} has a metadata value of unknown type {kind}; "
                                 "the file is corrupt.")
        return self.read(_SCALAR[kind])


def read_tensor_infos(path: Path) -> list[TensorInfo]:
    """The tensor table of a GGUF file (no tensor data is read)."""
    source = str(path)
    with open(path, "rb") as f:
        header = _Header(f, source)
        if f.read(4) != b"GGUF":
            raise ModelLoadError(f"{source} is not a GGUF file (no GGUF magic number).")
        version = header.read("I")
        if version not in (2, 3):
            raise ModelLoadError(f"GGUF file {source} has format version {version}; deepinfer reads versions 2 and 3.")
        n_tensors, n_fields = header.read("Q"), header.read("Q")
        alignment = 32
        for _ in range(n_fields):
            key, kind = header.string(), header.read("I")
            value = header.value(kind)
            if key == "general.alignment" and isinstance(value, int):
                alignment = value
        raw = []
        for _ in range(n_tensors):
            name, dims = header.string(), header.read("I")
            shape = tuple(header.read("Q") for _ in range(dims))
            raw.append((name, shape, header.read("I"), header.read("Q")))
        start = -(-f.tell() // alignment) * alignment
    return [_info(name, shape, kind, start + offset, source) for name, shape, kind, offset in raw]


def _info(name: str, shape: tuple[int, ...], kind: int, offset: int, source: str) -> TensorInfo:
    if kind not in GGML_TYPES:
        raise ModelLoadError(f"GGUF file {source}: tensor '{name}' has the unknown type {kind}.")
    type_name, per_block, block_bytes = GGML_TYPES[kind]
    if not shape or shape[0] % per_block:
        raise ModelLoadError(f"GGUF file {source}: tensor '{name}' ({type_name}) has rows of "
                             f"{shape[0] if shape else 0} values, not a whole number of {per_block}-value blocks; "
                             "its sizes do not match its shape.")
    elements = 1
    for n in shape:
        elements *= n
    return TensorInfo(name, type_name, shape, offset, elements // per_block * block_bytes)


def check_gguf_tensors(path: Path, quantized: bool) -> list[TensorInfo]:
    """Every tensor's type, shape and extent checked; `quantized`: only types a quantized load keeps."""
    infos = read_tensor_infos(path)
    size = path.stat().st_size
    for info in infos:
        if quantized and info.type_name not in FORMATS and info.type_name not in FLOAT_TYPES:
            raise ModelLoadError(
                f"GGUF file {path}: tensor '{info.name}' is {info.type_name}, which deepinfer does not run "
                f"quantized (it runs {', '.join(FORMATS)} and float tensors). Load it with quantization=None "
                "(--quantization none) to dequantize it to float, or use a file of another quantization.")
        if info.offset + info.nbytes > size:
            raise ModelLoadError(f"GGUF file {path}: tensor '{info.name}' needs bytes {info.offset} to "
                                 f"{info.offset + info.nbytes}, past the end of the file ({size} bytes): "
                                 "the file is truncated; download it again.")
    return infos
