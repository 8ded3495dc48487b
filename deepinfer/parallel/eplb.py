"""Expert-parallel load balancing (EPLB): replicate hot experts between steps, within a budget.

Every EPMoE counts the slots its rank's tokens routed to each expert. Between steps,
`rebalance(model, max_experts_per_rank)` sums the counts over ranks (all_reduce), plans a new
placement per layer, the same on every rank since every rank plans from the same totals, and
moves expert weights to their new holders with point-to-point send/recv from the expert's home
rank. Home placements never move, so every expert keeps at least one holder; a replica is a
copy of the same weights, so outputs change only by float summation order.

The plan is greedy: while it lowers the busiest rank's estimated load (a rank's load: the sum over
its experts of load / replicas), add the one replica of an expert on the busiest rank, on a rank
with room that does not hold it, that lowers that maximum most.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from deepinfer.parallel.expert_parallel import EPMoE, moe_layers
from deepinfer.parallel.placement import ExpertPlacement


def _rank_loads(holders: list[list[int]], load: list[float], world: int) -> list[float]:
    loads = [0.0] * world
    for e, ranks in enumerate(holders):
        for r in ranks:
            loads[r] += load[e] / len(ranks)
    return loads


def plan(home: ExpertPlacement, load: list[float], max_experts_per_rank: int) -> ExpertPlacement:
    """A placement that keeps `home` (one holder per expert) and adds replicas of hot experts."""
    world = home.world
    holders = [[ranks[0]] for ranks in home.holders]
    held = [sum(1 for h in holders if h[0] == r) for r in range(world)]
    if max(held) > max_experts_per_rank:
        raise ValueError(f"a budget of {max_experts_per_rank} experts per rank cannot hold the home placement "
                         f"({max(held)} experts on one rank)")
    while True:
        loads = _rank_loads(holders, load, world)
        busiest = max(range(world), key=lambda r: loads[r])
        best, best_max = None, max(loads) - 1e-9
        # Try one more replica of each expert on the busiest rank, on every rank with room; keep the
        # move that lowers the largest rank load most.
        for e in (e for e, ranks in enumerate(holders) if busiest in ranks and load[e] > 0):
            for r in (r for r in range(world) if held[r] < max_experts_per_rank and r not in holders[e]):
                trial = [list(h) for h in holders]
                trial[e].append(r)
                if (new_max := max(_rank_loads(trial, load, world))) < best_max:
                    best, best_max = (e, r), new_max
        if best is None:
            return ExpertPlacement(tuple(tuple(h) for h in holders), world)
        holders[best[0]].append(best[1])
        held[best[1]] += 1


def _home(placement: ExpertPlacement) -> ExpertPlacement:
    return ExpertPlacement(tuple((ranks[0],) for ranks in placement.holders), placement.world)


def _move(moe: EPMoE, new: ExpertPlacement) -> None:
    """Send every newly placed expert from its home rank, in the same order on every rank."""
    rank = moe.group.rank
    have = moe.local_weights()
    weights = {e: w for e, w in have.items() if rank in new.holders[e]}
    for e, ranks in enumerate(new.holders):
        src = ranks[0]
        for dst in ranks[1:]:
            if dst in moe.placement.holders[e]:
                continue  # already holds it
            if rank == src:
                for t in have[e]:
                    dist.send(t.contiguous(), dst)
            elif rank == dst:
                gate_up = torch.empty(moe.expert_shapes[0], dtype=moe.dtype)
                down = torch.empty(moe.expert_shapes[1], dtype=moe.dtype)
                dist.recv(gate_up, src)
                dist.recv(down, src)
                weights[e] = (gate_up, down)
    moe.set_local(new, weights)


def rebalance(model, max_experts_per_rank: int) -> list[ExpertPlacement]:
    """Replan and move every MoE layer's experts from the counts so far; reset the counts.
    Call on every rank between steps. Returns the new placements in layer order."""
    placements = []
    for moe in moe_layers(model):
        counts = moe.tokens_per_expert.clone()
        dist.all_reduce(counts)
        new = plan(_home(moe.placement), counts.tolist(), max_experts_per_rank)
        _move(moe, new)
        moe.tokens_per_expert.zero_()
        placements.append(new)
    return placements


def rank_loads(model) -> list[int]:
    """Slots each rank computed since the last reset, summed over layers (all_gather of counts)."""
    mine = torch.tensor([sum(int(m.computed_slots) for m in moe_layers(model))])
    every = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return [int(t) for t in every]


def reset_loads(model) -> None:
    for moe in moe_layers(model):
        moe.computed_slots = 0
