"""Token slots to the ranks that compute them and their results back, with all-to-all.

One MoE layer on one rank: T local tokens, each routed to k experts (T*k slots). Slots are sorted
by (target rank, expert), so each peer receives one contiguous run; `all_to_all_single` with
uneven split sizes moves the counts, then the rows and their expert ids, then the results back.
gloo implements all_to_all_single on CPU tensors (torch >= 1.8), NCCL on GPU. Every rank calls
every collective of every MoE layer, including ranks with no tokens this step (zero-length splits).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from deepinfer.parallel.group import ParallelError


@dataclass
class Dispatched:
    """What one rank sent and received for one layer.

    order [T*k]: the local slots in send order; send [W] / recv [W]: rows per peer;
    rows [M, hidden] and experts [M]: the slots this rank computes (M = sum(recv))."""

    order: torch.Tensor
    send: list[int]
    recv: list[int]
    rows: torch.Tensor
    experts: torch.Tensor


def _all_to_all(out: torch.Tensor, inp: torch.Tensor, out_splits: list[int], in_splits: list[int]) -> None:
    try:
        dist.all_to_all_single(out, inp, out_splits, in_splits)
    except RuntimeError as exc:  # a peer died or the group's timeout passed
        raise ParallelError(f"expert-parallel all-to-all failed on rank {dist.get_rank()}: {exc}") from exc


def dispatch(x: torch.Tensor, ids: torch.Tensor, targets: torch.Tensor, world: int) -> Dispatched:
    """x [T, hidden], ids [T, k] (global expert ids), targets [T*k] (rank per slot) -> Dispatched."""
    top_k = ids.shape[1]
    flat = ids.flatten()
    order = (targets * (1 << 32) + flat).argsort(stable=True)  # by rank, then expert id
    send_counts = torch.bincount(targets, minlength=world)  # [W]
    recv_counts = torch.empty_like(send_counts)
    _all_to_all(recv_counts, send_counts, [1] * world, [1] * world)
    send, recv = send_counts.tolist(), recv_counts.tolist()
    rows = x.new_empty(sum(recv), x.shape[1])
    _all_to_all(rows, x.index_select(0, order // top_k).contiguous(), recv, send)
    experts = flat.new_empty(sum(recv))
    _all_to_all(experts, flat[order].contiguous(), recv, send)
    return Dispatched(order, send, recv, rows, experts)


def combine(d: Dispatched, computed: torch.Tensor, weights: torch.Tensor, num_tokens: int,
            top_k: int) -> torch.Tensor:
    """computed [M, hidden] (unweighted expert outputs of d.rows) -> [T, hidden]: every token's
    weighted sum over its k experts, added in send order (by rank, then expert id)."""
    back = computed.new_empty(sum(d.send), computed.shape[1])
    _all_to_all(back, computed.contiguous(), d.send, d.recv)
    out = computed.new_zeros(num_tokens, computed.shape[1])
    slot_weights = weights.flatten()[d.order]
    out.index_add_(0, d.order // top_k, (back * slot_weights[:, None]).to(out.dtype))
    return out
