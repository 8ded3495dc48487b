"""Time to first token of a long shared prefix after a restart: KV tier on disk vs cold prefill.

    python benchmarks/kv_tier.py --prefix-tokens 2000 --json results/kv_tier.json

Every measurement runs in a fresh process (model loaded, one short unrelated warm-up request,
then the timed request), so nothing but the tier directory carries over:
1. fill: an engine with the tier sends the 2,000-token prefix plus a question (a cold prefill
   that also writes the prefix's blocks to the tier directory);
2. tier: a new process with the same model and directory sends the prefix with another question:
   the prefix's blocks are read from disk instead of computed;
3. cold: a new process without the tier sends that same prompt: the whole prompt is computed.
With batch-invariant attention and linears (`--invariant on`) the greedy outputs of 2 and 3 must
be equal (a prefix hit computes only the last tokens, and invariant mode makes each row's arithmetic
independent of how many rows a forward pass holds); with it off they may round apart, and the
table says whether they did.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_common import FILLER, model_dir, parser, setup, table
from result_json import for_script

QUESTIONS = (" Question one: who wrote it?", " Another question: where was it written?")


def phase(args, tier_dir: str | None, question: int, invariant: str) -> dict:
    """One fresh process: the timed request's TTFT, cached tokens and output."""
    command = [sys.executable, __file__, "--phase", str(question), "--prefix-tokens", str(args.prefix_tokens),
               "--threads", str(args.threads), "--dtype", args.dtype, "--invariant", invariant]
    if args.model:
        command += ["--model", args.model]
    if tier_dir:
        command += ["--tier-dir", tier_dir]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_phase(args) -> None:
    import torch
    torch.set_num_threads(args.threads)
    from deepinfer import LLM, SamplingParams

    options = {"kv_tier_dir": args.tier_dir} if args.tier_dir else {}
    llm = LLM(str(model_dir(args.model)), dtype=args.dtype, max_num_batched_tokens=2048,
              batch_invariant=args.invariant == "on", **options)
    params = SamplingParams(temperature=0, max_tokens=8)
    llm.generate([llm.tokenizer.encode("Warm-up: hello there.")], params)
    prefix = llm.tokenizer.encode(FILLER * 60)[:args.prefix_tokens]
    prompt = prefix + llm.tokenizer.encode(QUESTIONS[args.phase])
    start = time.perf_counter()
    out = llm.generate([prompt], params)[0]
    wall = time.perf_counter() - start
    tier = llm.engine.kv.tier
    if tier is not None:
        tier.close()   # the blocks are on disk before the process says it is done
    print(json.dumps({"ttft": out.ttft, "wall": wall, "prompt_tokens": len(prompt), "cached": out.num_cached_tokens,
                      "tokens": out.token_ids,
                      "loaded_blocks": tier.stats.loaded_blocks if tier else 0,
                      "stored_blocks": tier.stats.stored_blocks if tier else 0}))


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.set_defaults(dtype="float32")
    p.add_argument("--prefix-tokens", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=2, help="tier and cold runs each (the best is kept)")
    p.add_argument("--invariant", default="both", choices=["on", "off", "both"],
                   help="batch-invariant mode (outputs must then equal the cold prefill's)")
    p.add_argument("--phase", type=int, default=None, help=argparse_hidden())
    p.add_argument("--tier-dir", default=None, help=argparse_hidden())
    args = p.parse_args()
    if args.dtype == "both":
        args.dtype = "float32"
    if args.phase is not None:
        return run_phase(args)
    setup(args)
    columns = ["invariant", "run", "prompt tokens", "cached tokens", "blocks from disk", "TTFT ms", "speed-up",
               "output equals cold"]
    rows, failed = [], False
    for invariant in (["on", "off"] if args.invariant == "both" else [args.invariant]):
        with tempfile.TemporaryDirectory(prefix="kv-tier-") as tier_dir:
            fill = phase(args, tier_dir, 0, invariant)
            files = list(Path(tier_dir).glob("*/*.kvb"))
            tier_bytes = sum(f.stat().st_size for f in files)
            tiered = [phase(args, tier_dir, 1, invariant) for _ in range(args.repeats)]
            cold = [phase(args, None, 1, invariant) for _ in range(args.repeats)]
        best_tier, best_cold = min(tiered, key=lambda r: r["ttft"]), min(cold, key=lambda r: r["ttft"])
        same = all(r["tokens"] == best_cold["tokens"] for r in tiered + cold)
        failed |= invariant == "on" and not same
        rows += [[invariant, "fill (cold, writes the tier)", fill["prompt_tokens"], fill["cached"], 0,
                  f"{fill['ttft'] * 1000:.0f}", "", ""],
                 [invariant, "cold prefill, no tier", best_cold["prompt_tokens"], best_cold["cached"], 0,
                  f"{best_cold['ttft'] * 1000:.0f}", "1.0x", ""],
                 [invariant, "restart with the disk tier", best_tier["prompt_tokens"], best_tier["cached"],
                  best_tier["loaded_blocks"], f"{best_tier['ttft'] * 1000:.0f}",
                  f"{best_cold['ttft'] / best_tier['ttft']:.1f}x", "yes" if same else "no"]]
        print(rows[-1], flush=True)
        print(f"# invariant {invariant}: the fill wrote {fill['stored_blocks']} blocks, {len(files)} files, "
              f"{tier_bytes / 2**20:.1f} MiB", flush=True)
    table(rows, columns)
    results = for_script(__file__, __doc__)
    results.table("Time to first token after a restart: KV tier on disk vs cold prefill", columns, rows)
    results.write(args.json)
    if failed:
        raise SystemExit("with batch-invariant mode, outputs with the tier differ from the cold prefill's")


def argparse_hidden() -> str:
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
