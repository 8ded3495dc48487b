"""Multi-process inference on torch.distributed: expert parallelism with attention data parallelism.

Owns: joining a process group with a bounded wait (`group.py`), where each routed expert lives
(`placement.py`), moving tokens to the ranks that hold their experts and back with all-to-all
(`dispatch.py`), the expert-parallel MoE layer that replaces a model's MoE in place
(`expert_parallel.py`), replicating hot experts between steps (`eplb.py`), a lockstep greedy
runner, the library entry point (`runner.py`); and prefill/decode disaggregation (`disagg.py`): a prompt's KV blocks computed
by one engine and moved into another's prefix cache (`kv_transfer.py`).

Under expert parallelism every rank holds the whole model except the routed experts, of which it
keeps its slice (shared experts everywhere), and runs attention on its own requests only. Knows the
model stage (its MoE modules), the KV pool and block manager, and the engine's public API plus its
KV storage; knows nothing of the scheduler's internals, the server, sampling or constraints.
"""

from deepinfer.parallel.disagg import DisaggOutput, generate_disaggregated
from deepinfer.parallel.eplb import rebalance
from deepinfer.parallel.expert_parallel import EPMoE, idle_step, shard_experts
from deepinfer.parallel.group import ParallelError, RankGroup, join, spawn
from deepinfer.parallel.placement import ExpertPlacement
from deepinfer.parallel.runner import Balancing, EPResult, RankOutput, generate_expert_parallel

__all__ = ["Balancing", "DisaggOutput", "EPMoE", "EPResult", "ExpertPlacement", "ParallelError", "RankGroup",
           "RankOutput", "generate_disaggregated", "generate_expert_parallel", "idle_step", "join", "rebalance",
           "shard_experts", "spawn"]
