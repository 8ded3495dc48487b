"""Multi-process inference on torch.distributed: expert parallelism with attention data parallelism.

Owns: joining a process group with a bounded wait (`group.py`), where each routed expert lives
(`placement.py`), moving tokens to the ranks that hold their experts and back with all-to-all
(`dispatch.py`), the expert-parallel MoE layer that replaces a model's MoE in place
(`expert_parallel.py`), replicating hot experts between steps (`eplb.py`), and a lockstep greedy runner, the library entry point (`runner.py`).

Every rank holds the whole model except the routed experts, of which it keeps its slice (shared
experts everywhere), and runs attention on its own requests only. Knows the model stage (its MoE
modules) and the KV pool; knows nothing of the scheduler, the server, sampling or constraints.
"""

from deepinfer.parallel.expert_parallel import EPMoE, idle_step, shard_experts
from deepinfer.parallel.group import ParallelError, RankGroup, join, spawn
from deepinfer.parallel.placement import ExpertPlacement

__all__ = ["EPMoE", "ExpertPlacement", "ParallelError", "RankGroup", "idle_step", "join", "shard_experts",
           "spawn"]
