"""Cascade attention for decodes that share a cached prefix: read the shared blocks once.

When the prefix cache serves the same leading blocks to every decoding sequence (requests with
a common system prompt or instructions), batched decode attention would gather those blocks once
per sequence, then read each copy again. Here all decode query rows attend the shared keys
together, as one batch item (the blocks are gathered once, a few hundred keys), and each
sequence's own suffix separately (decode.py); the two partial results are merged with their
log-sum-exps:

    out = (out_p * exp(lse_p - m) + out_s * exp(lse_s - m)) / (exp(lse_p - m) + exp(lse_s - m))

Measured motivation (SmolLM2-135M, 32 extraction requests sharing 128 prompt tokens of ~370,
float32, 1 thread): the per-step KV gather and attention took 70 ms of a 210 ms decode step.

Only for windowless layers with equal key and value head sizes (the CPU flash kernel that returns
the log-sum-exp needs them), and only with prefix blocks every query row of the group sees in
full (a shared block ends at or before every member's first new token), so the shared part
needs no mask and every row keeps its own token in the suffix (no empty softmax). The split
changes the summation order: results are not bitwise equal to one fused call (this is the
default, not the batch-invariant, path). Knows nothing about requests or scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Fewer shared keys than this are not worth a second kernel call and the merge.
MIN_SHARED_BLOCKS = 4
# Members are split into classes by their leading blocks (two requests admitted in the same step
# compute the same prompt prefix into different blocks); more classes than this: no cascade.
MAX_CLASSES = 4

flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu  # (out, logsumexp [B, H, L] float32)


@dataclass
class SharedPrefix:
    """The first `blocks` blocks of every member, read once per class of members that share them."""

    blocks: int
    classes: list[tuple[torch.Tensor, torch.Tensor]]   # (member rows [m], their common block ids [blocks])


def shared_prefix(block_ids: list[list[int]], first_new: list[int], block_size: int) -> SharedPrefix | None:
    """The longest leading run of blocks that splits the members into at most MAX_CLASSES classes
    of identical blocks, all before each member's first new token; None when not worth it."""
    limit = min(min(first_new) // block_size, *(len(ids) for ids in block_ids))
    best = None
    for n in range(MIN_SHARED_BLOCKS, limit + 1):
        classes: dict[tuple[int, ...], list[int]] = {}
        for row, ids in enumerate(block_ids):
            classes.setdefault(tuple(ids[:n]), []).append(row)
        if len(classes) > MAX_CLASSES or max(len(rows) for rows in classes.values()) < 2:
            break
        best = (n, classes)
    if best is None:
        return None
    n, classes = best
    return SharedPrefix(n, [(torch.tensor(rows, dtype=torch.long), torch.tensor(key, dtype=torch.long))
                            for key, rows in classes.items()])


def prefix_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, blocks: torch.Tensor,
                     scale: float):
    """All rows of q [n, Hkv, G, Dk] over the same blocks, unmasked, as one batch item of n * G rows
    per kv head -> out [n, Hkv, G, Dv], logsumexp [n, Hkv, G] (float32); both strided views."""
    n, hkv, group, dk = q.shape
    keys, dv = blocks.numel() * k_blocks.shape[1], v_blocks.shape[3]
    kp = k_blocks.index_select(0, blocks).view(1, keys, hkv, dk).transpose(1, 2)       # [1, Hkv, P, Dk]
    vp = v_blocks.index_select(0, blocks).view(1, keys, hkv, dv).transpose(1, 2)       # [1, Hkv, P, Dv]
    qp = q.permute(1, 0, 2, 3).reshape(1, hkv, n * group, dk)                           # [1, Hkv, n*G, Dk]
    out, lse = flash(*widen(qp, kp, vp), scale=scale)  # (bfloat16: float32 is faster for n*G rows)
    out = out.to(q.dtype)
    return out.view(hkv, n, group, dv).transpose(0, 1), lse.view(hkv, n, group).transpose(0, 1)


def merge(out_p: torch.Tensor, lse_p: torch.Tensor, out_s: torch.Tensor, lse_s: torch.Tensor) -> torch.Tensor:
    """Softmax-weighted sum of two partial attentions over disjoint keys: out [..., D] and their
    float32 log-sum-exps [...]. exp(lse_p) / (exp(lse_p) + exp(lse_s)) = sigmoid(lse_p - lse_s).
    The result takes out_s's layout (contiguous in decode.py)."""
    w = torch.sigmoid(lse_p - lse_s).unsqueeze(-1)                                       # [..., 1]
    return torch.lerp(out_s.float(), out_p.float(), w).to(out_s.dtype)


def widen(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """bfloat16 CPU attention inputs as float32 (exact): PyTorch's CPU attention kernels run
    bfloat16 ~1.5x slower than float32 at prefill shapes (1 thread, 9 heads over 3 kv heads, 96-512
    queries over 250-512 keys: 924 -> 640 us, 1926 -> 1278, 8626 -> 6469 including the casts)."""
    if tensors[0].dtype != torch.bfloat16 or tensors[0].device.type != "cpu":
        return tensors
    return tuple(t.float() for t in tensors)
