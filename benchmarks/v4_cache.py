"""DeepSeek-V4's hybrid KV cache on a tiny V4 (real 129,280-token vocabulary, window 128, rates 4 and 128).

    python benchmarks/v4_cache.py --prefix-tokens 4000 --json v4_cache.json

Prefill and decode tokens/s through the engine; KV bytes per token per layer type held by a
request of --prefix-tokens tokens against a dense cache (every token's K=V row in every layer,
plus the compressed entries); time to first token on a --prefix-tokens prefix-cache hit with
bounded replay, exact replay and no cache; bounded replay's drift from exact (max |logit
difference| and KL at the first new tokens, greedy agreement over --decode-tokens tokens) as
swa_replay_tokens goes from 0 to the window and beyond. Random weights: the drift numbers say how
far a shortened window history moves this model, not what a trained V4 does.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from engine_common import parser, setup, table
from result_json import for_script
from v4_drift import ReplayProbe, drift
from v4_model import write_v4_dir


def prompt_ids(n: int, salt: int) -> list[int]:
    return [(7919 * i + 104729 * salt) % 120000 + 1000 for i in range(n)]  # ordinary (non-special) ids


def throughput(path, args) -> list[list]:
    from deepinfer import LLM, SamplingParams

    llm = LLM(str(path), speculative=False, enable_prefix_caching=False, max_num_batched_tokens=512)
    llm.generate(prompt_ids(600, 0), SamplingParams(temperature=0, max_tokens=2))  # warm-up (native builds)
    out = llm.generate(prompt_ids(args.prefix_tokens, 1), SamplingParams(temperature=0, max_tokens=1))[0]
    prefill = args.prefix_tokens / out.ttft
    engine, params = llm.engine, SamplingParams(temperature=0, max_tokens=args.decode_tokens, ignore_eos=True)
    for i in range(args.batch):
        engine.add_request(prompt_ids(128, 10 + i), params)
    while any(not r.sequences[0].output_token_ids for r in engine.requests.values()):
        engine.step()  # prefill and first tokens
    start, generated = time.perf_counter(), engine.counters["generation_tokens"]
    while engine.has_unfinished():
        engine.step()
    decode = (engine.counters["generation_tokens"] - generated) / (time.perf_counter() - start)
    return [[f"prefill, 1 x {args.prefix_tokens} tokens", f"{prefill:,.0f}"],
            [f"decode, {args.batch} requests", f"{decode:,.1f}"]]


def memory(path, args) -> list[list]:
    """Bytes per token per layer type held by one running request of prefix-tokens tokens."""
    from deepinfer import LLM, SamplingParams

    llm = LLM(str(path), speculative=False, enable_prefix_caching=False, max_num_batched_tokens=512)
    engine, n = llm.engine, args.prefix_tokens
    request = engine.add_request(prompt_ids(n, 2), SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
    while not engine.requests[request].sequences[0].output_token_ids:
        engine.step()
    seq = engine.requests[request].sequences[0]
    layout, table_ = engine.kv.layout, seq.table
    element = engine.kv.pool.window[0].element_size()
    bs, page = layout.block_size, layout.page_tokens
    held = [sum(p >= 0 for p in table_.window) * bs * d * element for d in layout.window_dims]
    dense = [n * d * element for d in layout.window_dims]
    for b in layout.branches:
        entries = len(table_.entries.block_ids) * (page // b.rate) * b.entry_dim * element
        held[b.layer] += sum(p >= 0 for p in table_.pending[b.rate]) * bs * 2 * b.width * element + entries
        dense[b.layer] += n // b.rate * b.entry_dim * element
    rows = []
    kinds = engine.model.v4.layer_types
    for kind in dict.fromkeys(kinds):
        layers = [i for i, k in enumerate(kinds) if k == kind]
        paged = sum(held[i] for i in layers) / len(layers) / seq.num_computed
        full = sum(dense[i] for i in layers) / len(layers) / n
        rows.append([kind, len(layers), f"{paged:,.1f}", f"{full:,.1f}", f"{full / paged:,.1f}x"])
    return rows


def ttft(path, args) -> list[list]:
    from deepinfer import LLM, SamplingParams

    rows, params = [], SamplingParams(temperature=0, max_tokens=1)
    prefix = prompt_ids(args.prefix_tokens, 3)
    for label, options in (("bounded (140)", dict(swa_replay="bounded")), ("exact", dict(swa_replay="exact")),
                           ("no cache", dict(enable_prefix_caching=False))):
        llm = LLM(str(path), speculative=False, max_num_batched_tokens=512, **options)
        best = None
        for r in range(args.repeats):
            head = prompt_ids(16, 100 + r)  # a fresh prefix each round
            llm.generate(head + prefix + [11, 12, 13], params)
            out = llm.generate(head + prefix + [21, 22, 23, 24], params)[0]
            best = out if best is None or out.ttft < best.ttft else best
        computed = len(best.prompt_token_ids) - best.num_cached_tokens
        rows.append([label, len(best.prompt_token_ids), computed, f"{best.ttft * 1000:,.0f}"])
        print(rows[-1], flush=True)
    return rows


def sweep(path, args) -> tuple[list[list], list]:
    from deepinfer.kvcache import ReplayPolicy
    from deepinfer.model import load_model

    model = load_model(path)
    probe = ReplayProbe(model, prompt_ids(args.prefix_tokens, 4), prompt_ids(16, 5), args.decode_tokens)
    exact, cold = probe.restore(ReplayPolicy("exact")), probe.restore(None)
    rows = [["exact", exact["computed"], "0", "0", "0", "1.00", args.decode_tokens],
            ["no cache", cold["computed"]] + _cells(drift(cold, exact))]
    points = []
    for tokens in args.replay_tokens:
        bounded = probe.restore(ReplayPolicy("bounded", tokens))
        d = drift(bounded, exact)
        rows.append([f"bounded {tokens}", bounded["computed"]] + _cells(d))
        points.append((tokens, d["kl_mean"]))
        print(rows[-1], flush=True)
    return rows, points


def _cells(d: dict) -> list:
    return [f"{d['max_abs']:.3g}", f"{d['kl_first']:.3g}", f"{d['kl_mean']:.3g}", f"{d['agree']:.2f}",
            d["common_prefix"]]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--prefix-tokens", type=int, default=4000)
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--batch", type=int, default=4, help="requests decoding together (decode tokens/s)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--replay-tokens", type=lambda s: [int(x) for x in s.split(",")],
                   default=[0, 16, 64, 127, 140, 256, 512, 1024], help="comma-separated swa_replay_tokens")
    args = p.parse_args()
    setup(args)
    results = for_script(__file__, __doc__)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_v4_dir(Path(tmp) / "v4", args.layers, args.hidden, args.window)
        sections = [
            ("Throughput (tokens/s, float32, speculation off)", ["measure", "tokens/s"], throughput(path, args)),
            (f"KV bytes per token per layer type, one {args.prefix_tokens}-token request",
             ["layer type", "layers", "hybrid paged", "dense", "dense / paged"], memory(path, args)),
            (f"Time to first token on a {args.prefix_tokens}-token prefix-cache hit",
             ["replay", "prompt tokens", "tokens computed", "TTFT ms"], ttft(path, args))]
        drift_rows, points = sweep(path, args)
    sections.append((f"Bounded replay vs exact replay ({args.prefix_tokens}-token hit, 16 new tokens, "
                     f"{args.decode_tokens} greedy tokens)",
                     ["replay", "tokens computed", "max |dlogit|", "KL first", "KL mean", "greedy agree",
                      "common prefix"], drift_rows))
    for title, columns, rows in sections:
        print(f"\n{title}")
        table(rows, columns)
        results.table(title, columns, rows)
    results.line("bounded replay: KL from exact at the new tokens", "swa_replay_tokens", "mean KL", points)
    results.write(args.json)


if __name__ == "__main__":
    main()
