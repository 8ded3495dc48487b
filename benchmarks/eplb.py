"""Expert-parallel load balancing (EPLB) under a skewed router: tokens per rank and step time, before and after.

    python benchmarks/eplb.py --ranks 2 --experts 16 --hot 3 --json eplb.json

A tiny random DeepSeek-V3 (transformers-built, float32) whose router correction bias steers most
slots to --hot experts of rank 0. --ranks processes join over loopback (gloo); each runs --steps
prefill steps of --batch fresh random prompts of --tokens tokens on its own (attention data
parallelism), the routed slots moving to their experts' ranks by all-to-all. Then EPLB rebalances
from the counted tokens per expert, within --budget experts per rank, and the same steps run again.
Prints max/mean routed slots computed per rank and the step time (the slowest rank's, mean over
steps) before and after. On a shared CPU the ranks contend for cores: read step times with the load.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from engine_common import table  # noqa: E402
from result_json import add_json_argument, for_script  # noqa: E402

from deepinfer.kvcache.paged import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes  # noqa: E402
from deepinfer.model import load_model  # noqa: E402
from deepinfer.parallel import shard_experts, spawn  # noqa: E402
from deepinfer.parallel.eplb import rank_loads, rebalance, reset_loads  # noqa: E402


def write_model(path: Path, args) -> Path:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        "deepseek_v3", vocab_size=512, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32,
        q_lora_rank=None, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        moe_intermediate_size=args.hidden, n_routed_experts=args.experts, num_experts_per_tok=args.top_k,
        n_group=1, topk_group=1, n_shared_experts=1, first_k_dense_replace=0, max_position_embeddings=4096)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("e_score_correction_bias"):  # the skew: rank 0's first experts win the top-k
                tensor.zero_()
                tensor[:args.hot] = 1.0
            elif tensor.is_floating_point():
                tensor.copy_(1.0 + 0.1 * torch.randn(tensor.shape) if "norm" in name else
                             0.05 * torch.randn(tensor.shape))
    model.save_pretrained(path)
    return path


def timed_steps(model, pool, args, rank: int, seed: int) -> tuple[float, list[int]]:
    g = torch.Generator().manual_seed(1000 * seed + rank)
    blocks = args.tokens // 16 + 1
    times = []
    reset_loads(model)
    for _ in range(args.steps):
        ids = torch.randint(0, 512, (args.batch * args.tokens,), generator=g)
        positions = torch.arange(args.tokens).repeat(args.batch)
        seqs = [SeqSlice(list(range(b * blocks, (b + 1) * blocks)), 0, args.tokens) for b in range(args.batch)]
        dist.barrier()
        start = time.perf_counter()
        model(ids, positions, PagedKVCache(pool, seqs, invariant=False),
              logits_indices=torch.arange(args.tokens - 1, args.batch * args.tokens, args.tokens))
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # a step lasts as long as its slowest rank
        times.append(float(elapsed))
    return sum(times) / len(times), rank_loads(model)


def rank_main(group, model_dir: str, args, out: str) -> None:
    torch.set_num_threads(args.threads)
    model = load_model(model_dir)
    pool = KVPool(probe_layer_shapes(model), args.batch * (args.tokens // 16 + 1), 16, model.dtype)
    shard_experts(model, group)
    timed_steps(model, pool, args, group.rank, seed=9)  # warm-up; also the counts EPLB plans from
    before = timed_steps(model, pool, args, group.rank, seed=1)
    placements = rebalance(model, args.budget)
    after = timed_steps(model, pool, args, group.rank, seed=1)
    if group.rank == 0:
        replicas = sum(len(h) for h in placements[0].holders) - args.experts
        Path(out).write_text(json.dumps({"before": before, "after": after, "replicas_layer0": replicas}))


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=4)
    p.add_argument("--hot", type=int, default=3, help="experts of rank 0 the router favours")
    p.add_argument("--budget", type=int, default=0, help="experts per rank (default: 1.5x the home share)")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=4, help="prompts per rank per step")
    p.add_argument("--tokens", type=int, default=64, help="tokens per prompt")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    add_json_argument(p)
    args = p.parse_args()
    args.budget = args.budget or (3 * args.experts) // (2 * args.ranks)
    results = for_script(__file__, __doc__)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = write_model(Path(tmp) / "model", args)
        out = Path(tmp) / "result.json"
        spawn(rank_main, args.ranks, str(model_dir), args, str(out), timeout_s=120)
        r = json.loads(out.read_text())
    rows = []
    for phase in ("before", "after"):
        seconds, loads = r[phase]
        mean = sum(loads) / len(loads)
        rows.append([phase, " / ".join(map(str, loads)), max(loads), round(mean, 1), f"{max(loads) / mean:.2f}x",
                     f"{seconds * 1e3:.1f}"])
    columns = ["placement", "slots per rank", "max", "mean", "max / mean", "step ms"]
    title = (f"{args.ranks} ranks, {args.experts} experts (top-{args.top_k}, {args.hot} hot on rank 0), budget "
             f"{args.budget} experts per rank, {r['replicas_layer0']} replicas added in layer 0, "
             f"{args.batch}x{args.tokens} tokens per rank per step, load {os.getloadavg()[0]:.1f}")
    print(title)
    table(rows, columns)
    results.table(title, columns, rows)
    results.write(args.json)


if __name__ == "__main__":
    main()
