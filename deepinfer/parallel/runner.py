"""Greedy generation with expert parallelism: N ranks in lockstep, each decoding its own requests.

The library entry point. `generate_expert_parallel(model_dir, requests_per_rank)` spawns one rank
per list of requests; every rank loads the model, keeps its slice of the routed experts, and
runs its requests as one packed batch per step through a paged KV pool of its own (attention
data parallelism; DeepSeek-V4, whose cache is per sequence, runs them one forward each). Steps are global: a rank whose requests are all done, or that had none, runs
`idle_step` until every rank is done, so the MoE layers' all-to-alls always meet. Ranks return
their tokens (and, on request, every step's logits) through files in a temporary directory.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from deepinfer.kvcache.paged import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes
from deepinfer.model import load_model
from deepinfer.parallel.eplb import rebalance
from deepinfer.parallel.expert_parallel import idle_step, shard_experts
from deepinfer.parallel.group import RankGroup, spawn
from deepinfer.parallel.placement import ExpertPlacement

BLOCK_SIZE = 16


@dataclass
class RankOutput:
    """One request's greedy tokens and, when asked, the logits [V] of every step that made one."""

    tokens: list[int]
    logits: list[torch.Tensor] = field(default_factory=list)


@dataclass(frozen=True)
class Balancing:
    """EPLB during a run: rebalance once after step `after_step` within `max_experts_per_rank`."""

    after_step: int
    max_experts_per_rank: int


@dataclass
class EPResult:
    """outputs[r]: rank r's outputs in request order; placements: every MoE layer's final placement."""

    outputs: list[list[RankOutput]]
    placements: list[ExpertPlacement]


@dataclass
class _Seq:
    prompt: list[int]
    max_new_tokens: int
    blocks: list[int]
    out: RankOutput
    cached: int = 0

    @property
    def done(self) -> bool:
        return len(self.out.tokens) >= self.max_new_tokens

    def next_input(self) -> list[int]:
        return self.prompt if self.cached == 0 else self.out.tokens[-1:]


def _allocate(requests: list[tuple[list[int], int]]) -> tuple[list[_Seq], int]:
    seqs, used = [], 0
    for prompt, new in requests:
        n = math.ceil((len(prompt) + new) / BLOCK_SIZE)
        seqs.append(_Seq(list(prompt), new, list(range(used, used + n)), RankOutput([])))
        used += n
    return seqs, max(used, 1)


@torch.no_grad()
def _step(model, pool: KVPool, active: list[_Seq], keep_logits: bool) -> None:
    inputs = [s.next_input() for s in active]
    slices = [SeqSlice(s.blocks, s.cached, len(x)) for s, x in zip(active, inputs)]
    ids = torch.tensor([t for x in inputs for t in x], dtype=torch.long)
    positions = torch.tensor([s.cached + i for s, x in zip(active, inputs) for i in range(len(x))])
    last = torch.tensor(list(torch.tensor([len(x) for x in inputs]).cumsum(0) - 1))
    logits = model(ids, positions, PagedKVCache(pool, slices), logits_indices=last)  # [N, V]
    for s, x, row in zip(active, inputs, logits):
        s.cached += len(x)
        s.out.tokens.append(int(row.argmax()))
        if keep_logits:
            s.out.logits.append(row.clone())


@torch.no_grad()
def _step_one_by_one(model, caches: dict[int, object], active: list[_Seq], rounds: int, keep_logits: bool) -> None:
    """DeepSeek-V4 (a per-sequence cache, no paged batch): one forward per active sequence, then
    idle passes up to `rounds`, the busiest rank's count, so every rank makes as many passes."""
    for i in range(rounds):
        if i >= len(active):
            idle_step(model)
            continue
        s = active[i]
        x = s.next_input()
        row = model(torch.tensor(x), torch.arange(s.cached, s.cached + len(x)), caches[id(s)],
                    logits_indices=torch.tensor([len(x) - 1]))[0]
        s.cached += len(x)
        s.out.tokens.append(int(row.argmax()))
        if keep_logits:
            s.out.logits.append(row.clone())


def rank_main(group: RankGroup, model_dir: str, requests_per_rank: list[list[tuple[list[int], int]]],
              placement: ExpertPlacement | None, keep_logits: bool, balancing: Balancing | None,
              out_dir: str) -> None:
    """One rank: load, shard, then lockstep steps until every rank's requests are done."""
    torch.set_num_threads(1)
    model = load_model(model_dir)
    per_sequence = hasattr(model, "new_cache")  # DeepSeek-V4's own decode state
    seqs, blocks = _allocate(requests_per_rank[group.rank])
    if per_sequence:
        caches = {id(s): model.new_cache() for s in seqs}
    else:  # the probe's forward runs before sharding: it must not reach peers
        pool = KVPool(probe_layer_shapes(model), blocks, BLOCK_SIZE, model.dtype)
    layers = shard_experts(model, group, placement)
    step = 0
    while True:
        active = [s for s in seqs if not s.done]
        busy = torch.tensor([len(active)])
        dist.all_reduce(busy, op=dist.ReduceOp.MAX)
        if int(busy) == 0:
            break
        if per_sequence:
            _step_one_by_one(model, caches, active, int(busy), keep_logits)
        elif active:
            _step(model, pool, active, keep_logits)
        else:
            idle_step(model)
        if balancing is not None and step == balancing.after_step:
            rebalance(model, balancing.max_experts_per_rank)
        step += 1
    torch.save(([s.out for s in seqs], [m.placement for m in layers]), Path(out_dir) / f"rank{group.rank}.pt")


def generate_expert_parallel(model_dir: str | Path, requests_per_rank: list[list[tuple[list[int], int]]], *,
                             placement: ExpertPlacement | None = None, keep_logits: bool = False,
                             balancing: Balancing | None = None, timeout_s: float = 60.0) -> EPResult:
    """Greedy-decode `requests_per_rank[r]` ((prompt ids, max new tokens) pairs) on rank r of
    len(requests_per_rank) ranks, experts placed by `placement` (default: contiguous slices)."""
    world = len(requests_per_rank)
    for r, requests in enumerate(requests_per_rank):
        for i, (prompt, new) in enumerate(requests):
            if not prompt or new < 1:
                raise ValueError(f"rank {r} request {i}: needs a non-empty prompt and max_new_tokens >= 1")
    with tempfile.TemporaryDirectory(prefix="deepinfer-ep-") as out_dir:
        spawn(rank_main, world, str(model_dir), requests_per_rank, placement, keep_logits, balancing, out_dir,
              timeout_s=timeout_s)
        saved = [torch.load(Path(out_dir) / f"rank{r}.pt", weights_only=False) for r in range(world)]
    return EPResult([outputs for outputs, _ in saved], saved[0][1])
