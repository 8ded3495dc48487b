"""The engine's settings: KV cache size and blocks, scheduling budgets, and the decoding modes.

A plain dataclass: knows the defaults and why they are what they are, nothing about running them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deepinfer.engine.invariance import DEFAULT_TILE
from deepinfer.engine.speculation.speculative import SpeculativeConfig


@dataclass
class EngineConfig:
    block_size: int = 16
    kv_cache_bytes: int = 1 << 30        # KV pool size when num_kv_blocks is not given
    num_kv_blocks: int | None = None
    # The KV tier (kvcache/tier/): every prefix block the cache registers is also written, off the
    # step loop, to block files under kv_tier_dir (at most kv_tier_bytes, least recently used out)
    # and/or kept in host memory (kv_tier_host_bytes); a prefix the pool no longer holds is copied
    # back from there instead of recomputed, also after a restart. Off when both are unset.
    kv_tier_dir: str | None = None
    kv_tier_bytes: int = 8 << 30
    kv_tier_host_bytes: int = 0
    max_num_batched_tokens: int = 512
    max_num_seqs: int = 64
    chunked_prefill: bool = True
    enable_prefix_caching: bool = True
    # Fixed-shape row tiles for float linears (invariance.py), padded element-wise ops and per-row
    # attention whose arithmetic never depends on the batch (kvcache/native_decode.py NativePlan, or
    # kvcache/invariant.py): same tokens whatever the batch. None: on where every linear runs on
    # quantized blocks (their kernel reduces each row in a fixed order; the mode then costs ~1%:
    # SmolLM2 Q4_1, 2 threads, 32 extraction requests 300 vs 297 tok/s, single-stream decode
    # equal), off for float weights (~1.4x the time of that extraction batch, ~2x single-stream).
    batch_invariant: bool | None = None
    linear_tile: int = DEFAULT_TILE
    max_model_len: int | None = None
    # Sliding-window replay (kvcache/replay.py): a prefix-cache hit or a preempted sequence whose
    # window KV the cache does not keep recomputes the tokens before it. "bounded" replays
    # swa_replay_tokens (DeepSeek-V4.1 keeps a 140-token suffix; output drifts slightly from a cold
    # run), "exact" as far as the windows of all layers compound (output equals a cold run's).
    # None: bounded for hybrid models (DeepSeek-V4), exact for the sliding-window models.
    swa_replay: str | None = None
    swa_replay_tokens: int = 140
    # Append text the constraint forces without sampling it (speculation/jump_forward.py): fewer
    # forward passes for the same outputs. Requests with logprobs never jump.
    jump_forward: bool = True
    # Speculative decoding (speculation/speculative.py): drafts verified by sampling every drafted
    # position as the plain path would; outputs are the plain path's (bit-identical on quantized
    # weights and under batch_invariant, otherwise up to rounding of differently batched logits).
    # On by default: it verifies a draft only where the measured step cost says it pays.
    speculative: bool = True
    speculative_config: SpeculativeConfig = field(default_factory=SpeculativeConfig)
