"""Expert parallelism with attention data parallelism against the single-process model.

Ranks are real processes joined over loopback with gloo; each holds a slice of the routed
experts and decodes its own requests. Every step's logits must equal the unsharded model's
within 1e-5 (float32), with uneven requests per rank and ranks idle in some or all steps.
"""

from __future__ import annotations

import pytest
import torch

from conftest import single_process_greedy, single_process_greedy_v4
from deepinfer.model import load_model
from deepinfer.parallel import ExpertPlacement, ParallelError
from deepinfer.parallel.group import free_port, join
from deepinfer.parallel.eplb import plan
from deepinfer.parallel.runner import Balancing, generate_expert_parallel


def prompts(n: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 300, (int(torch.randint(2, 12, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


def check_against_single_process(model, requests_per_rank, outputs, reference=single_process_greedy):
    for r, (requests, outs) in enumerate(zip(requests_per_rank, outputs)):
        assert len(outs) == len(requests)
        for (prompt, new), out in zip(requests, outs):
            tokens, logits = reference(model, prompt, new)
            assert out.tokens == tokens, f"rank {r} prompt {prompt}"
            for step, (got, want) in enumerate(zip(out.logits, logits)):
                torch.testing.assert_close(got, want, atol=1e-5, rtol=0, msg=f"rank {r} step {step}")


def test_two_ranks_uneven_requests_match_single_process(deepseek_dir, deepseek):
    p = prompts(4, seed=1)
    # rank 0: three requests of different lengths; rank 1: one request that ends first, so rank 1
    # is idle for the later steps while rank 0 still dispatches to its experts.
    # After the prefill step EPLB rebalances (room for 6 experts per rank: 4 home + 2 replicas), so
    # the decode steps run on a new placement with copied weights, and must not change a logit.
    requests = [[(p[0], 4), (p[1], 2), (p[2], 3)], [(p[3], 1)]]
    result = generate_expert_parallel(deepseek_dir, requests, keep_logits=True,
                                      balancing=Balancing(after_step=0, max_experts_per_rank=6))
    check_against_single_process(deepseek, requests, result.outputs)
    assert any(len(ranks) > 1 for placement in result.placements for ranks in placement.holders)
    assert all(n <= 6 for placement in result.placements for n in placement.experts_per_rank())


@pytest.mark.slow
def test_four_ranks_with_an_empty_rank_and_replicas_match_single_process(deepseek_dir, deepseek):
    p = prompts(5, seed=2)
    requests = [[(p[0], 3)], [], [(p[1], 5), (p[2], 2)], [(p[3], 2), (p[4], 4)]]
    result = generate_expert_parallel(deepseek_dir, requests, keep_logits=True)
    check_against_single_process(deepseek, requests, result.outputs)
    # the same with hot experts replicated: rank 1 holds copies of experts 0-3 as well
    placement = ExpertPlacement(tuple((e * 4 // 8,) + ((1,) if e < 4 and e * 4 // 8 != 1 else ())
                                      for e in range(8)), 4)
    replicated = generate_expert_parallel(deepseek_dir, requests, keep_logits=True, placement=placement,
                                          balancing=Balancing(after_step=1, max_experts_per_rank=4))
    check_against_single_process(deepseek, requests, replicated.outputs)


def test_plan_replicates_the_hot_expert_and_respects_the_budget():
    home = ExpertPlacement.contiguous(8, 4)  # two experts per rank
    load = [100.0, 1, 1, 1, 1, 1, 1, 1]
    placed = plan(home, load, max_experts_per_rank=3)
    assert placed.holders[0][0] == 0 and len(placed.holders[0]) == 4  # on every rank
    assert all(ranks[0] == home.holders[e][0] for e, ranks in enumerate(placed.holders))
    assert max(placed.experts_per_rank()) <= 3
    assert plan(home, load, max_experts_per_rank=2) == home  # no room: nothing moves
    with pytest.raises(ValueError, match="cannot hold the home placement"):
        plan(home, load, max_experts_per_rank=1)


def test_a_rank_that_never_joins_fails_within_the_timeout():
    with pytest.raises(ParallelError, match="rank 0 of 2 could not join"):
        join(0, 2, f"tcp://127.0.0.1:{free_port()}", timeout_s=1)


@pytest.mark.slow
def test_deepseek_v4_two_ranks_with_hash_and_topk_routing_match_single_process(deepseek_v4_dir):
    p = [[(7 * i + 3 + k) % 96 for i in range(n)] for k, n in enumerate((14, 9, 5))]
    requests = [[(p[0], 3), (p[1], 2)], [(p[2], 1)]]
    result = generate_expert_parallel(deepseek_v4_dir, requests, keep_logits=True,
                                      balancing=Balancing(after_step=0, max_experts_per_rank=6))
    check_against_single_process(load_model(deepseek_v4_dir), requests, result.outputs, single_process_greedy_v4)
