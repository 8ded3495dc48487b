"""Routing policies on a shared-prefix workload: 1 and 2 real replicas, and 1-64 by simulation.

    python benchmarks/router.py --systems 4 --users 6 --json router.json             # live, tiny model
    python benchmarks/router.py --simulate --plots docs/img --json router-sim.json  # simulation only

Live: two Ray replicas start once; each run (1 replica, or 2 under each policy) sends its own fresh
system prompts (so no run inherits another's cache), `--users` users per prompt, `--concurrency` at a
time, and reports throughput, TTFT p50/p99 and the prefix hit rate (cached prompt tokens / prompt
tokens). Simulation (`router_sim.py`): the same policies on a Poisson trace over 1-64 replicas,
with the step cost `a + b * tokens` (`--step-cost`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from result_json import add_json_argument, for_script
from router_sim import StepCost, Trace, simulate

POLICIES = ("cache_aware", "round_robin", "least_loaded")
COLUMNS = ["replicas", "policy", "tokens/s", "TTFT p50 ms", "TTFT p99 ms", "prefix hit rate"]


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def run_workload(pool, prompts, params, concurrency: int) -> tuple[float, list[float], int]:
    gate = asyncio.Semaphore(concurrency)
    ttfts, tokens = [], 0

    async def one(ids):
        nonlocal tokens
        async with gate:
            start, first = time.perf_counter(), None
            async for out in pool.add_request(prompt_token_ids=ids, params=params):
                if out.outputs[0].token_ids and first is None:
                    first = time.perf_counter()
                tokens += len(out.outputs[0].token_ids)
            ttfts.append(first - start)

    start = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    return time.perf_counter() - start, ttfts, tokens


def live(args, results) -> list[list]:
    from deepinfer.router import ReplicaPool
    from deepinfer.testing import make_tiny_model_dir
    from deepinfer.types import SamplingParams
    import tempfile

    model = args.model or str(make_tiny_model_dir(tempfile.mkdtemp() + "/model"))
    two = ReplicaPool.start(model, 2, engine_kwargs={"kv_cache_bytes": 64 << 20}, num_cpus=0,
                            ray_num_cpus=args.ray_cpus)
    params = SamplingParams(max_tokens=args.output_tokens, temperature=0.0, ignore_eos=True)
    rng, rows = random.Random(0), []
    try:
        for replicas, policy in [(1, "cache_aware")] + [(2, p) for p in POLICIES]:
            pool = two if replicas == 2 else ReplicaPool([two.replicas[0].actor], two.info, two.tokenizer)
            pool.policy = policy
            systems = [[rng.randrange(3, 300) for _ in range(args.system_tokens)] for _ in range(args.systems)]
            prompts = [s + [rng.randrange(3, 300) for _ in range(args.user_tokens)]
                       for _ in range(args.users) for s in systems]
            rng.shuffle(prompts)
            asyncio.run(pool.refresh())  # stats as of now: the replicas are shared between runs
            before = pool.stats().get("prefix_cache_hit_tokens", 0)
            seconds, ttfts, tokens = asyncio.run(run_workload(pool, prompts, params, args.concurrency))
            asyncio.run(pool.refresh())
            hit = pool.stats().get("prefix_cache_hit_tokens", 0) - before
            rows.append([replicas, policy if replicas == 2 else "-", round(tokens / seconds, 1),
                         round(quantile(ttfts, 0.5) * 1000), round(quantile(ttfts, 0.99) * 1000),
                         round(hit / sum(map(len, prompts)), 3)])
            print(rows[-1], flush=True)
    finally:
        two.shutdown()
    results.table("Live replicas on a shared-prefix workload", COLUMNS, rows)
    return rows


def simulated(args, results) -> list[list]:
    a, b = (float(x) for x in args.step_cost.split(","))
    trace = Trace(systems=args.systems * 2, system_tokens=args.system_tokens * 2, user_tokens=args.user_tokens * 4,
                  output_tokens=args.output_tokens, requests=args.sim_requests, rate=args.rate)
    rows, series = [], {}
    for replicas in (1, 2, 4, 8, 16, 32, 64):
        for policy in POLICIES:
            r = simulate(trace, replicas, policy, StepCost(a, b), cache_blocks=args.cache_blocks)
            rows.append([replicas, policy, round(r["throughput"], 1), round(r["ttft_p50"] * 1000, 1),
                         round(r["ttft_p99"] * 1000, 1), round(r["hit_rate"], 3)])
            for key in ("ttft_p99", "hit_rate"):
                series.setdefault((key, policy), []).append((replicas, r[key] * (1000 if key == "ttft_p99" else 1)))
    for (key, policy), points in series.items():
        results.line(f"{policy} {key}", "replicas", "TTFT p99 ms" if key == "ttft_p99" else "prefix hit rate", points)
    results.table(f"Simulated replicas: {trace.requests} requests at {trace.rate}/s, {trace.systems} system "
                  f"prompts of {trace.system_tokens} tokens, step cost {a} + {b} * tokens s", COLUMNS, rows)
    if args.plots:
        plot(series, args.plots)
    return rows


def plot(series, folder: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for (key, policy), points in series.items():
        ax = axes[0 if key == "hit_rate" else 1]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=policy)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("replicas")
        ax.set_ylabel("prefix hit rate" if key == "hit_rate" else "TTFT p99 ms")
        ax.legend()
    fig.tight_layout()
    fig.savefig(f"{folder}/router_simulation.png", dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="model path (default: a tiny random model)")
    p.add_argument("--simulate", action="store_true", help="simulation only, no replicas")
    p.add_argument("--systems", type=int, default=4)
    p.add_argument("--users", type=int, default=6)
    p.add_argument("--system-tokens", type=int, default=256)
    p.add_argument("--user-tokens", type=int, default=16)
    p.add_argument("--output-tokens", type=int, default=16)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--ray-cpus", type=int, default=2)
    p.add_argument("--step-cost", default="0.004,0.00008", help="a,b of a step's cost a + b * tokens (seconds)")
    p.add_argument("--rate", type=float, default=40.0, help="simulated arrivals per second")
    p.add_argument("--sim-requests", type=int, default=600)
    p.add_argument("--cache-blocks", type=int, default=256, help="simulated prefix cache per replica, in blocks")
    p.add_argument("--plots", default=None, help="folder for router_simulation.png")
    add_json_argument(p)
    args = p.parse_args()
    results = for_script(__file__, __doc__)
    if not args.simulate:
        live(args, results)
    for row in simulated(args, results):
        print(row)
    results.write(args.json)


if __name__ == "__main__":
    main()
