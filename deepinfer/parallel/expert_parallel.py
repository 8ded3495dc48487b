"""The expert-parallel MoE layer: local router and shared experts, routed experts across ranks.

`shard_experts(model, group, placement)` swaps every MoE layer of a loaded DeepSeek-V3 (`MoE`)
or DeepSeek-V4 (`V4MoE`) model for an `EPMoE` that keeps only this rank's routed experts. The
router and the shared experts run on the rank's own tokens; routed slots go to their experts'
ranks (dispatch.py) and come back weighted. Attention is untouched: each rank attends its own
requests (attention data parallelism). A rank with no tokens in a step calls `idle_step(model)`
so that its peers' collectives still meet a partner in every MoE layer.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from deepinfer.model.deepseek_v4_moe import V4MoE, clamped_swiglu
from deepinfer.model.layers import gemm_layout, linear
from deepinfer.model.moe import MoE
from deepinfer.parallel.dispatch import combine, dispatch
from deepinfer.parallel.group import RankGroup
from deepinfer.parallel.placement import ExpertPlacement


class EPMoE(nn.Module):
    """One MoE layer's share on one rank.

    gate_up [E_local, 2I, hidden], down [E_local, hidden, I]: the experts `local_ids` in order;
    `tokens_per_expert` [E] counts the slots this rank's tokens routed to each expert (EPLB reads it)."""

    def __init__(self, source: MoE | V4MoE, group: RankGroup, placement: ExpertPlacement) -> None:
        super().__init__()
        self.group, self.placement = group, placement
        self.router = source.router
        self.v4 = isinstance(source, V4MoE)
        if self.v4:
            inter, limit = source.inter, source.limit
            self.activation: Callable[[torch.Tensor], torch.Tensor] = lambda gu: clamped_swiglu(gu, inter, limit)
            self.shared_modules = nn.ModuleList([source.shared_gate_up, source.shared_down])
        else:
            inter = source.experts.intermediate
            self.activation = lambda gu: _swiglu(gu, inter)
            self.shared_modules = nn.ModuleList([source.shared] if source.shared is not None else [])
        self.hidden = source.experts.hidden
        full_gate_up, full_down = source.experts.gate_up.data, source.experts.down.data
        self.num_experts = full_gate_up.shape[0]
        self.expert_shapes = (tuple(full_gate_up.shape[1:]), tuple(full_down.shape[1:]))
        self.dtype = full_gate_up.dtype
        self.tokens_per_expert = torch.zeros(self.num_experts, dtype=torch.long)
        self.computed_slots = 0  # slots this rank computed for any rank: its expert load
        self.set_local(placement, {e: (full_gate_up[e], full_down[e]) for e in placement.local_experts(group.rank)})

    def set_local(self, placement: ExpertPlacement, weights: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Hold exactly the experts `placement` gives this rank; `weights` maps expert id -> (gate_up, down)."""
        self.placement = placement
        self.local_ids = placement.local_experts(self.group.rank)
        missing = [e for e in self.local_ids if e not in weights]
        if missing:
            raise ValueError(f"rank {self.group.rank} is placed experts {missing} without their weights")
        self.slot = torch.full((self.num_experts,), -1, dtype=torch.long)
        self.slot[self.local_ids] = torch.arange(len(self.local_ids))
        if self.local_ids:
            self.gate_up = gemm_layout(torch.stack([weights[e][0] for e in self.local_ids]))
            self.down = gemm_layout(torch.stack([weights[e][1] for e in self.local_ids]))
        else:
            self.gate_up = self.down = None

    def local_weights(self) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        return {e: (self.gate_up[i], self.down[i]) for i, e in enumerate(self.local_ids)}

    def _shared(self, x: torch.Tensor) -> torch.Tensor | None:
        if self.v4:
            gate_up, down = self.shared_modules
            return down(self.activation(gate_up(x)))
        return self.shared_modules[0](x) if len(self.shared_modules) else None

    def _compute(self, rows: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """rows [M, hidden] with their expert ids [M] (all local) -> unweighted outputs [M, hidden]."""
        out = torch.empty_like(rows)
        if rows.shape[0] == 0:
            return out
        slots = self.slot[experts]
        if bool((slots < 0).any()):
            raise RuntimeError(f"rank {self.group.rank} received slots for experts it does not hold")
        order = slots.argsort(stable=True)
        counts = torch.bincount(slots, minlength=len(self.local_ids)).tolist()
        start = 0
        for i, n in enumerate(counts):
            if n:
                idx = order[start:start + n]
                y = linear(self.activation(linear(rows.index_select(0, idx), self.gate_up[i])), self.down[i])
                out.index_copy_(0, idx, y)
                start += n
        return out

    def forward(self, x: torch.Tensor, *router_args: torch.Tensor) -> torch.Tensor:
        """x [T, hidden] (T may be 0), router_args: V4's input_ids [T] -> [T, hidden]."""
        if x.shape[0]:
            ids, weights = self.router(x, *router_args)  # [T, k] each
        else:
            ids = torch.empty(0, self._top_k(), dtype=torch.long)
            weights = torch.empty(0, self._top_k(), dtype=torch.float32)
        self.tokens_per_expert += torch.bincount(ids.flatten(), minlength=self.num_experts)
        d = dispatch(x, ids, self.placement.targets(ids.flatten()), self.group.world)
        self.computed_slots += d.rows.shape[0]
        out = combine(d, self._compute(d.rows, d.experts), weights, x.shape[0], ids.shape[1])
        shared = self._shared(x)
        return out if shared is None else out + shared

    def _top_k(self) -> int:
        router = self.router
        return router.top_k if self.v4 else router.moe.num_experts_per_tok


def _swiglu(gate_up: torch.Tensor, inter: int) -> torch.Tensor:
    gate, up = gate_up.split(inter, dim=-1)
    return F.silu(gate) * up


def moe_layers(model: nn.Module) -> list[EPMoE]:
    return [layer.mlp for layer in model.layers if isinstance(layer.mlp, EPMoE)]


def shard_experts(model: nn.Module, group: RankGroup, placement: ExpertPlacement | None = None) -> list[EPMoE]:
    """Replace every MoE layer of `model` in place by this rank's EPMoE; return them in layer order.

    Placement defaults to contiguous slices; the full expert stacks are dropped."""
    swapped = []
    for layer in model.layers:
        if isinstance(layer.mlp, (MoE, V4MoE)):
            place = placement or ExpertPlacement.contiguous(layer.mlp.experts.gate_up.shape[0], group.world)
            layer.mlp = EPMoE(layer.mlp, group, place)
            swapped.append(layer.mlp)
    if not swapped:
        raise ValueError("the model has no mixture-of-experts layer to shard")
    return swapped


@torch.no_grad()
def idle_step(model: nn.Module) -> None:
    """Take part in one forward pass's collectives with no tokens: every MoE layer, in order."""
    for moe in moe_layers(model):
        moe(torch.empty(0, moe.hidden, dtype=model.dtype))
