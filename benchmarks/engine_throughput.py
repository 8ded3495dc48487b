"""Concurrent JSON-Schema extraction requests: deepinfer vs transformers generate + xgrammar.

    python benchmarks/engine_throughput.py --requests 32 --max-tokens 100 --dtype both
    python benchmarks/engine_throughput.py --requests 1 4 16 32 --json results/throughput.json   # against concurrency

Both sides decode greedily on the same weights; tokens/s counts generated tokens over wall time.
Each output is validated against the schema (jsonschema) and the count of valid outputs reported.
deepinfer rows: batch invariance on/off with prefix caching off (every request computes its whole
prompt, like transformers), and prefix caching on (the prompts share their first ~150 tokens; the
cache is cleared before the run, so the first request computes them). `--repeat-first` runs the
first configuration twice in the process, to show any first-run-in-process effect. `--jump-forward`
adds rows without jump-forward decoding. `--speculative` picks rows with/without speculative decoding
(n-gram drafts; each timed run starts with a fresh speculator: no outputs of earlier runs to draft
from, no learned acceptance); "same" counts outputs equal to the same row without speculation.
Both sides compile their grammar and warm up untimed.
"""

from __future__ import annotations

import json
import time

import jsonschema

from engine_common import (EXTRACTION_SCHEMA, dtypes, extraction_prompt, hf_generate, hf_model, model_dir, parser,
                           setup, table, xgrammar_factory)
from result_json import for_script


def valid(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), EXTRACTION_SCHEMA)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def run_deepinfer(llm, prompts, params, invariant: bool, caching: bool, jump: bool, spec: bool) -> tuple:
    """One timed generate from an empty prefix cache
    -> (seconds, tokens, cached tokens/request, valid, texts, stats of the run)."""
    engine = llm.engine
    engine.config.batch_invariant = invariant
    engine.config.jump_forward = jump
    engine.config.speculative = spec
    engine.reset_speculator()
    engine.blocks.enable_prefix_caching = caching
    engine.blocks.clear_cache()
    hits = engine.blocks.stats.hit_tokens
    before = engine.stats()
    start, cpu = time.perf_counter(), time.process_time()
    outs = llm.generate(prompts, params)
    seconds = time.perf_counter() - start
    cached = (engine.blocks.stats.hit_tokens - hits) / len(prompts)
    after = engine.stats()
    after["cpu_seconds"] = round(time.process_time() - cpu, 2)  # robust to other processes' load
    stats = {k: after[k] - before.get(k, 0) for k in ("cpu_seconds", "steps", "generation_tokens", "draft_tokens",
                                                      "verified_tokens", "accepted_tokens") if k in after}
    texts = [o.text for o in outs]
    return seconds, sum(len(o.token_ids) for o in outs), cached, sum(valid(t) for t in texts), texts, stats


COLUMNS = ["engine", "dtype", "requests", "prompt tok", "cached tok/req", "gen tokens", "seconds", "tok/s",
           "vs transformers", "valid JSON", "tok/step", "drafts accepted/verified", "same"]


def arguments():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, nargs="+", default=[32],
                   help="concurrent requests; several counts give one row per engine and count")
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--hf-batch", type=int, default=16)
    p.add_argument("--invariant", choices=["on", "off", "both"], default="both")
    p.add_argument("--prefix-caching", choices=["on", "off", "both"], default="both",
                   help="rows with the prefix cache (invariance off) and/or without it")
    p.add_argument("--repeat-first", action="store_true")
    p.add_argument("--jump-forward", choices=["on", "off", "both"], default="on",
                   help="deepinfer rows with jump-forward decoding (the default) and/or without it")
    p.add_argument("--speculative", choices=["on", "off", "both"], default="both",
                   help="deepinfer rows with speculative decoding (n-gram drafts) and/or without it")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every row this many times, alternating engines; report each row's fastest run "
                        "(on a shared machine the load changes between rows)")
    return p.parse_args()


def deepinfer_runs(args) -> list[tuple]:
    """((invariant, prefix caching), jump-forward, speculative) for every deepinfer row asked for."""
    configs = [(inv, False) for inv in {"on": [True], "off": [False], "both": [False, True]}[args.invariant]]
    configs = configs if args.prefix_caching in ("off", "both") else []
    configs += [(False, True)] if args.prefix_caching in ("on", "both") else []
    if args.repeat_first and configs:
        configs.insert(0, configs[0])
    jumps = {"on": [True], "off": [False], "both": [True, False]}[args.jump_forward]
    specs = {"on": [True], "off": [False], "both": [False, True]}[args.speculative]
    return [(c, j, sp) for c in configs for j in jumps for sp in specs]


def row_name(invariant: bool, caching: bool, jump: bool, spec: bool) -> str:
    on = lambda flag: "on" if flag else "off"  # noqa: E731
    return (f"deepinfer (invariant {on(invariant)}, prefix cache {on(caching)}, jump-forward {on(jump)}, "
            f"speculative {on(spec)})")


def measure_count(args, llm, prompts, params, peer_side, dtype: str) -> list[tuple[str, tuple]]:
    """Every row for one request count: [(engine name, (seconds, tokens, cached, valid, per step, accepted,
    same))], each deepinfer row's fastest of `--rounds` runs, then the peer's."""
    best: dict = {}
    plain_texts: dict = {}
    peer = None
    for _ in range(args.rounds):
        for i, ((invariant, caching), jump, spec) in enumerate(deepinfer_runs(args)):
            *result, texts, stats = run_deepinfer(llm, prompts, params, invariant, caching, jump, spec)
            name = row_name(invariant, caching, jump, spec)
            if not spec:
                plain_texts[(invariant, caching, jump)] = texts
            base = plain_texts.get((invariant, caching, jump))
            same = "-" if base is None else sum(a == b for a, b in zip(base, texts))
            result += [f"{stats['generation_tokens'] / max(1, stats['steps']):.2f}",
                       f"{stats['accepted_tokens']}/{stats['verified_tokens']}" if spec else "-", same]
            print([name, dtype, len(prompts), *result, stats], flush=True)
            if (i, name) not in best or result[0] < best[(i, name)][0]:
                best[(i, name)] = result
        if peer_side is not None:
            model, tok, factory = peer_side
            seconds, tokens, texts = hf_generate(model, tok, prompts, args.max_tokens, args.hf_batch, factory)
            print(["transformers", dtype, len(prompts), seconds, tokens], flush=True)
            if peer is None or seconds < peer[0]:
                peer = (seconds, tokens, 0, sum(valid(t) for t in texts), "-", "-", "-")
    named = [(name, r) for (_, name), r in best.items()]
    return named + ([(f"transformers + xgrammar (batch {args.hf_batch})", peer)] if peer else [])


def main() -> None:
    args = arguments()
    setup(args)
    from deepinfer import LLM, SamplingParams

    results = for_script(__file__, __doc__)
    path = model_dir(args.model)
    rows, lines = [], {}
    for dtype in dtypes(args.dtype):
        llm = LLM(str(path), dtype=dtype)
        all_prompts = [llm.tokenizer.apply_chat_template(extraction_prompt(i)) for i in range(max(args.requests))]
        params = SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0, max_tokens=args.max_tokens)
        llm.generate(all_prompts[:2], SamplingParams(json_schema=EXTRACTION_SCHEMA, max_tokens=4))  # compile + warm up
        peer_side = None
        if not args.no_peer:
            model, tok = hf_model(path, dtype)
            factory = xgrammar_factory(tok, model.config.vocab_size, EXTRACTION_SCHEMA)
            hf_generate(model, tok, all_prompts[:2], 4, 2, factory)  # untimed warm-up, as deepinfer's
            peer_side = (model, tok, factory)
        for count in args.requests:
            prompts = all_prompts[:count]
            prompt_tokens = sum(len(llm.tokenizer.encode(x)) for x in prompts) / len(prompts)
            named = measure_count(args, llm, prompts, params, peer_side, dtype)
            peer = dict(named).get(f"transformers + xgrammar (batch {args.hf_batch})")
            for name, (seconds, tokens, cached, ok, per_step, accepted, same) in named:
                ratio = f"{(tokens / seconds) / (peer[1] / peer[0]):.2f}x" if peer else "-"
                rows.append([name, dtype, count, f"{prompt_tokens:.0f}", f"{cached:.0f}", tokens,
                             f"{seconds:.1f}", f"{tokens / seconds:.1f}", ratio, ok, per_step, accepted, same])
                lines.setdefault(f"{name}, {dtype}", []).append((count, tokens / seconds))
    table(rows, COLUMNS)
    results.table("JSON Schema extraction: generated tokens/s", COLUMNS, rows)
    for name, points in lines.items():
        results.line(name, "concurrent requests", "generated tokens/s", points)
    results.write(args.json)


if __name__ == "__main__":
    main()
