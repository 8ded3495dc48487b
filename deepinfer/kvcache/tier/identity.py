"""Keys of tier blocks: the model's identity and a stable hash chain over a prefix's tokens.

The block manager's in-memory chain (`chain_hash`) uses Python's `hash`, which is neither stable
across processes nor wide enough to trust on disk. A tier key is instead
    key_0 = blake2b(identity || tokens_0),  key_i = blake2b(key_{i-1} || tokens_i)
(tokens as little-endian int32), so it names the whole prefix up to and including block i, and
the identity (architecture, config, a fingerprint of the weights, KV dtype, block size, per-layer
K/V shapes) makes a different model, or the same model with another KV layout, miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any

import torch

KEY_BYTES = 20
SAMPLES_PER_TENSOR = 64  # weight elements fingerprinted per tensor (strided): random inits differ


@dataclass(frozen=True)
class ModelIdentity:
    digest: bytes                    # KEY_BYTES
    description: dict[str, Any]      # what the digest covers (written into every block's header)

    @property
    def hex(self) -> str:
        return self.digest.hex()


def _weights_fingerprint(model: Any) -> str:
    """A digest of every weight's name, shape, dtype and a strided sample of its values."""
    hasher = hashlib.blake2b(digest_size=KEY_BYTES)
    state = model.state_dict() if isinstance(model, torch.nn.Module) else {}
    for name, tensor in sorted(state.items()):
        hasher.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
        flat = tensor.detach().reshape(-1)
        if flat.numel():
            step = max(1, flat.numel() // SAMPLES_PER_TENSOR)
            sample = flat[::step][:SAMPLES_PER_TENSOR].to("cpu").contiguous()
            hasher.update(sample.view(torch.uint8).numpy().tobytes())
    return hasher.hexdigest()


def _config_of(model: Any) -> Any:
    config = getattr(model, "config", None)
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    return vars(config) if config is not None else None


def model_identity(model: Any, layer_shapes: list[tuple[tuple[int, ...], tuple[int, ...]]],
                   block_size: int, dtype: torch.dtype) -> ModelIdentity:
    """layer_shapes: per layer ((Hkv, dk), (Hkv, dv)), what one token stores."""
    description = {
        "architecture": type(model).__module__ + "." + type(model).__qualname__,
        "config": _config_of(model),
        "weights": _weights_fingerprint(model),
        "kv_dtype": str(dtype).removeprefix("torch."),
        "block_size": block_size,
        "layers": [[list(k), list(v)] for k, v in layer_shapes],
    }
    text = json.dumps(description, sort_keys=True, default=str)
    return ModelIdentity(hashlib.blake2b(text.encode(), digest_size=KEY_BYTES).digest(), description)


def next_digest(parent: bytes, tokens: tuple[int, ...] | list[int]) -> bytes:
    return hashlib.blake2b(parent + struct.pack(f"<{len(tokens)}i", *tokens), digest_size=KEY_BYTES).digest()


def block_digests(identity: ModelIdentity, token_ids: list[int], block_size: int, count: int) -> list[bytes]:
    """Tier keys of the first `count` full blocks of `token_ids`."""
    keys, parent = [], identity.digest
    for index in range(count):
        parent = next_digest(parent, token_ids[index * block_size:(index + 1) * block_size])
        keys.append(parent)
    return keys
