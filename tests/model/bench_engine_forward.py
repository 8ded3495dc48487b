"""Replay the engine's forward passes of the extraction benchmark (a measurement, not a test).

    python tests/model/bench_engine_forward.py capture --dtype float32 --out /tmp/steps.pt
    python tests/model/bench_engine_forward.py replay --steps /tmp/steps.pt [--profile 10] [--save ref.pt]
    python tests/model/bench_engine_forward.py replay --steps /tmp/steps.pt --ref ref.pt
    python tests/model/bench_engine_forward.py attention --steps /tmp/steps.pt [--repeat 4]

`capture` runs the 32 JSON extraction requests of benchmarks/engine_throughput.py once (prefix
cache, jump-forward and speculation on, invariance off) and records every forward pass: token ids,
positions, the sequences' block tables and lengths, the logits rows. `replay` runs the same passes
in the same order on a fresh KV pool with the same block ids, so every step recomputes exactly the
KV it read in the run, and prints the process CPU time per step (and, with --profile N, the
torch.profiler table of step N). `--save` keeps the logits; `compare` reports the largest
difference against saved logits (--ref) and whether the greedy argmax of every row agrees.
`attention` times only the paged attention of every step (`PagedKVCache` built, `attend` called
for each layer, random q/k/v and pool contents of the model's shapes), with the caches flushed
before each step as the model's weights would (the min of --repeat runs per step): a steadier
measure of the KV cache's share than whole-step times on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def capture(args) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from engine_common import EXTRACTION_SCHEMA, extraction_prompt, model_dir

    from deepinfer import LLM, SamplingParams

    llm = LLM(str(model_dir(None)), dtype=args.dtype)
    engine = llm.engine
    engine.config.batch_invariant, engine.config.speculative, engine.config.jump_forward = False, True, True
    prompts = [llm.tokenizer.apply_chat_template(extraction_prompt(i)) for i in range(args.requests)]
    llm.generate(prompts[:2], SamplingParams(json_schema=EXTRACTION_SCHEMA, max_tokens=4))
    engine.reset_speculator()
    engine.blocks.clear_cache()
    steps, forward = [], engine._forward

    def record(input_ids, positions, cache, logits_indices):
        steps.append(dict(ids=input_ids.clone(), pos=positions.clone(), idx=logits_indices.clone(),
                          seqs=[(list(s.block_ids[:-(-s.total // cache.pool.block_size)]), s.num_cached, s.num_new)
                                for s in cache.seqs]))
        return forward(input_ids, positions, cache, logits_indices)

    engine._forward = record
    llm.generate(prompts, SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0, max_tokens=args.max_tokens))
    torch.save(dict(steps=steps, num_blocks=len(engine.blocks.ref_counts), block_size=engine.blocks.block_size,
                    dtype=args.dtype), args.out)
    print(f"{len(steps)} steps, {sum(s['ids'].numel() for s in steps)} tokens -> {args.out}")


def replay(args) -> None:
    from deepinfer.kvcache import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes
    from deepinfer.model import load_model
    from deepinfer.model.hub import resolve_model

    data = torch.load(args.steps)
    data["steps"] = data["steps"][:args.limit]
    dtype = DTYPES[args.dtype or data["dtype"]]
    model = load_model(resolve_model(None), dtype=dtype)
    pool = KVPool(probe_layer_shapes(model), data["num_blocks"], data["block_size"], dtype)
    saved, times = [], []
    wall = time.perf_counter()
    for rep in range(args.repeat):
        for i, st in enumerate(data["steps"]):
            slices = [SeqSlice(b, c, n) for b, c, n in st["seqs"]]
            prof = None
            if args.profile is not None and i == args.profile and rep == args.repeat - 1:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                prof.__enter__()
            start = time.process_time()
            with torch.inference_mode():
                cache = PagedKVCache(pool, slices, invariant=False)
                idx = st["idx"] if st["idx"].numel() else st["idx"].new_zeros(1)
                logits = model.forward(st["ids"], st["pos"], cache, logits_indices=idx)
            elapsed = time.process_time() - start
            if prof is not None:
                prof.__exit__(None, None, None)
                print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))
            if rep == args.repeat - 1:
                times.append(elapsed)
                saved.append(logits.float().clone())
    steps = data["steps"]
    for i, (st, t) in enumerate(zip(steps, times)):
        new = [n for _, _, n in st["seqs"]]
        kind = "prefill" if max(new) > 8 else "decode"
        if args.verbose:
            print(f"step {i:2d} {kind:7s} rows {len(new):2d} tokens {sum(new):4d} logits {st['idx'].numel():3d} "
                  f"{t * 1000:7.1f} ms")
    pre = sum(t for st, t in zip(steps, times) if max(n for _, _, n in st["seqs"]) > 8)
    print(f"total {sum(times):.3f} s CPU ({len(times)} steps): prefill-bearing {pre:.3f} s, "
          f"decode-only {sum(times) - pre:.3f} s; wall {time.perf_counter() - wall:.1f} s for {args.repeat} rounds")
    if args.save:
        torch.save(saved, args.save)
    if args.ref:
        ref = torch.load(args.ref)
        worst, flips = 0.0, 0
        for a, b in zip(saved, ref):
            worst = max(worst, (a - b).abs().max().item())
            flips += int((a.argmax(-1) != b.argmax(-1)).sum())
        print(f"vs {args.ref}: max |diff| {worst:.3g}, argmax differs on {flips} rows")


def attention(args) -> None:
    from deepinfer.kvcache import KVPool, PagedKVCache, SeqSlice, probe_layer_shapes
    from deepinfer.model import load_model
    from deepinfer.model.hub import resolve_model

    data = torch.load(args.steps)
    steps = data["steps"][:args.limit]
    dtype = DTYPES[args.dtype or data["dtype"]]
    model = load_model(resolve_model(None), dtype=dtype)
    shapes, heads, windows = probe_layer_shapes(model), model.config.num_heads, model.config.layer_sliding_windows
    del model
    pool = KVPool(shapes, data["num_blocks"], data["block_size"], dtype)
    gen = torch.Generator().manual_seed(0)
    for t in pool.k + pool.v:
        t.normal_(generator=gen)
    flush = torch.empty(400 * 2**20 // 4)  # larger than the last-level cache
    best = [float("inf")] * len(steps)
    for rep in range(args.repeat):
        for i, st in enumerate(steps):
            n = st["ids"].numel()
            qkv = [(torch.randn(n, heads, s.k[1], generator=gen, dtype=dtype),
                    torch.randn(n, *s.k, generator=gen, dtype=dtype),
                    torch.randn(n, *s.v, generator=gen, dtype=dtype)) for s in shapes]
            flush.fill_(rep)
            start = time.process_time()
            with torch.inference_mode():
                cache = PagedKVCache(pool, [SeqSlice(b, c, k) for b, c, k in st["seqs"]], invariant=False)
                for layer, (q, k, v) in enumerate(qkv):
                    cache.attend(layer, q, k, v, scale=q.shape[-1] ** -0.5, sliding_window=windows[layer])
            best[i] = min(best[i], time.process_time() - start)
    pre = sum(t for st, t in zip(steps, best) if max(n for _, _, n in st["seqs"]) > 8)
    print(f"attention {sum(best):.3f} s CPU ({len(best)} steps, min of {args.repeat}): "
          f"prefill-bearing {pre:.3f} s, decode-only {sum(best) - pre:.3f} s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["capture", "replay", "attention"])
    p.add_argument("--dtype", default=None, choices=list(DTYPES))
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--out", default="/tmp/engine_steps.pt")
    p.add_argument("--steps", default="/tmp/engine_steps.pt")
    p.add_argument("--profile", type=int, default=None)
    p.add_argument("--rows", type=int, default=30)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--save", default=None)
    p.add_argument("--ref", default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--limit", type=int, default=None, help="replay only the first N steps")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.mode == "capture":
        args.dtype = args.dtype or "float32"
        capture(args)
    elif args.mode == "attention":
        attention(args)
    else:
        replay(args)


if __name__ == "__main__":
    main()
