"""Where each routed expert lives: one or more holder ranks per expert (a replica set).

A token slot routed to expert e goes to one of e's holders, picked by the slot's index so that
a hot expert's tokens spread over its replicas. Every replica holds the same weights, so which
one computes a slot changes no value beyond float summation order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ExpertPlacement:
    """holders[e]: the ranks that hold routed expert e (at least one, no repeats)."""

    holders: tuple[tuple[int, ...], ...]
    world: int

    def __post_init__(self) -> None:
        for e, ranks in enumerate(self.holders):
            if not ranks or len(set(ranks)) != len(ranks) or not all(0 <= r < self.world for r in ranks):
                raise ValueError(f"expert {e}: holders {ranks} must be distinct ranks in 0..{self.world - 1}")

    @classmethod
    def contiguous(cls, num_experts: int, world: int) -> "ExpertPlacement":
        """Expert e on rank e * world // num_experts: each rank a contiguous slice of the ids."""
        if num_experts < world:
            raise ValueError(f"{num_experts} routed experts cannot be split over {world} ranks")
        return cls(tuple((e * world // num_experts,) for e in range(num_experts)), world)

    @property
    def num_experts(self) -> int:
        return len(self.holders)

    def local_experts(self, rank: int) -> list[int]:
        return [e for e, ranks in enumerate(self.holders) if rank in ranks]

    def experts_per_rank(self) -> list[int]:
        return [len(self.local_experts(r)) for r in range(self.world)]

    def target_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(table [E, R] of holder ranks padded by repetition, replicas [E]) for vectorised lookup,
        R the largest replica count."""
        width = max(len(r) for r in self.holders)
        table = torch.tensor([[ranks[i % len(ranks)] for i in range(width)] for ranks in self.holders])
        return table, torch.tensor([len(r) for r in self.holders])

    def targets(self, experts: torch.Tensor) -> torch.Tensor:
        """experts [N] (flat token slots) -> the rank that computes each slot [N]."""
        table, replicas = self.target_table()
        pick = torch.arange(experts.numel()) % replicas[experts]  # round-robin over each expert's replicas
        return table[experts, pick]
