"""The on-disk (and on-wire) format of one KV block, described in docs/kv_cache.md.

    MAGIC (8 bytes) | header length (uint32 LE) | header (UTF-8 JSON) | payload | checksum (16 bytes)

The header names the model identity, the block's key and its parent's, its tokens, the dtype and
every tensor's name, shape, byte offset and length in the payload; the payload is the tensors'
raw little-endian bytes, C order, each [block_size, Hkv, d]; the checksum is blake2b-128 of
everything before it. `decode` checks all of it against what the reader expects and raises
`BlockFormatError` saying what differs: a truncated, corrupt or foreign block is never loaded.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass

import torch

MAGIC = b"DIKVBLK1"
VERSION = 1
CHECKSUM_BYTES = 16
_PREFIX = len(MAGIC) + 4


class BlockFormatError(ValueError):
    """A block file that must not be loaded (truncated, corrupt, another model's, another block's)."""


@dataclass
class BlockRecord:
    """One block's KV: per layer k [block_size, Hkv, dk] and v [block_size, Hkv, dv], on the CPU."""

    model: str                 # identity hex
    key: str                   # this block's tier key, hex
    parent: str | None         # the previous block's key (None for the first block)
    tokens: list[int]          # the block's own token ids
    k: list[torch.Tensor]
    v: list[torch.Tensor]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)


def _raw(tensor: torch.Tensor) -> bytes:
    return tensor.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()


def encode(record: BlockRecord) -> bytes:
    dtype = record.k[0].dtype
    tensors, offset, payload = [], 0, []
    for name, tensor in [(f"k.{i}", t) for i, t in enumerate(record.k)] + [(f"v.{i}", t) for i, t in enumerate(record.v)]:
        raw = _raw(tensor)
        tensors.append({"name": name, "shape": list(tensor.shape), "offset": offset, "nbytes": len(raw)})
        payload.append(raw)
        offset += len(raw)
    header = {"format": VERSION, "model": record.model, "key": record.key, "parent": record.parent,
              "block_size": len(record.tokens), "tokens": record.tokens,
              "dtype": str(dtype).removeprefix("torch."), "layers": len(record.k), "tensors": tensors}
    head = json.dumps(header, separators=(",", ":")).encode()
    body = MAGIC + struct.pack("<I", len(head)) + head + b"".join(payload)
    return body + hashlib.blake2b(body, digest_size=CHECKSUM_BYTES).digest()


@dataclass(frozen=True)
class Expected:
    """What a reader requires of a block before loading it."""

    model: str
    key: str
    tokens: list[int]
    dtype: torch.dtype
    k_shapes: list[tuple[int, ...]]   # per layer (block_size, Hkv, dk)
    v_shapes: list[tuple[int, ...]]


def _header(data: bytes) -> tuple[dict, int]:
    if len(data) < _PREFIX + CHECKSUM_BYTES:
        raise BlockFormatError(f"truncated: {len(data)} bytes")
    if data[:len(MAGIC)] != MAGIC:
        raise BlockFormatError("not a deepinfer KV block (bad magic)")
    body, checksum = data[:-CHECKSUM_BYTES], data[-CHECKSUM_BYTES:]
    if hashlib.blake2b(body, digest_size=CHECKSUM_BYTES).digest() != checksum:
        raise BlockFormatError("checksum mismatch (truncated or corrupt)")
    (length,) = struct.unpack_from("<I", data, len(MAGIC))
    if _PREFIX + length > len(body):
        raise BlockFormatError("header length past the end of the file")
    try:
        header = json.loads(data[_PREFIX:_PREFIX + length])
    except ValueError as exc:
        raise BlockFormatError(f"unreadable header: {exc}") from None
    if not isinstance(header, dict):
        raise BlockFormatError("header is not an object")
    return header, _PREFIX + length


def decode(data: bytes, expected: Expected) -> BlockRecord:
    header, start = _header(data)
    payload = memoryview(data)[start:len(data) - CHECKSUM_BYTES]
    checks = [("format", header.get("format"), VERSION), ("model", header.get("model"), expected.model),
              ("key", header.get("key"), expected.key), ("tokens", header.get("tokens"), expected.tokens),
              ("dtype", header.get("dtype"), str(expected.dtype).removeprefix("torch."))]
    for field, found, want in checks:
        if found != want:
            raise BlockFormatError(f"{field} is {str(found)[:80]!r}, expected {str(want)[:80]!r}")
    shapes = {f"k.{i}": s for i, s in enumerate(expected.k_shapes)} | {f"v.{i}": s for i, s in enumerate(expected.v_shapes)}
    tensors = header.get("tensors")
    if not isinstance(tensors, list) or [t.get("name") for t in tensors if isinstance(t, dict)] != list(shapes):
        raise BlockFormatError("tensor list differs from this model's layers")
    element = torch.empty(0, dtype=expected.dtype).element_size()
    out: dict[str, torch.Tensor] = {}
    for entry in tensors:
        shape, offset, nbytes = tuple(entry.get("shape", ())), entry.get("offset"), entry.get("nbytes")
        if shape != tuple(shapes[entry["name"]]):
            raise BlockFormatError(f"tensor {entry['name']} has shape {shape}, expected {shapes[entry['name']]}")
        if not isinstance(offset, int) or nbytes != element * math.prod(shape) or offset < 0 or offset + nbytes > len(payload):
            raise BlockFormatError(f"tensor {entry['name']} lies outside the payload")
        raw = bytearray(payload[offset:offset + nbytes])
        out[entry["name"]] = torch.frombuffer(raw, dtype=expected.dtype).reshape(shape)
    count = len(expected.k_shapes)
    return BlockRecord(expected.model, expected.key, header.get("parent"), list(expected.tokens),
                       [out[f"k.{i}"] for i in range(count)], [out[f"v.{i}"] for i in range(count)])

