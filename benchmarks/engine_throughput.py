"""32 concurrent JSON-Schema extraction requests: deepinfer vs transformers generate + xgrammar.

    python benchmarks/engine_throughput.py --requests 32 --max-tokens 100 --dtype both

Both sides decode greedily on the same weights; tokens/s counts generated tokens over wall time.
Each output is validated against the schema (jsonschema) and the count of valid outputs reported.
deepinfer rows: batch invariance on/off with prefix caching off (every request computes its whole
prompt, like transformers), and prefix caching on (the prompts share their first ~150 tokens; the
cache is cleared before the run, so the first request computes them). `--repeat-first` runs the
first configuration twice in the process, to show any first-run-in-process effect. `--jump-forward`
adds rows without jump-forward decoding. Both sides compile their grammar and warm up untimed.
"""

from __future__ import annotations

import json
import time

import jsonschema

from engine_common import (EXTRACTION_SCHEMA, dtypes, extraction_prompt, hf_generate, hf_model, model_dir, parser,
                           setup, table, xgrammar_factory)


def valid(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), EXTRACTION_SCHEMA)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def run_deepinfer(llm, prompts, params, invariant: bool, caching: bool, jump: bool) -> tuple:
    """One timed generate from an empty prefix cache -> (seconds, tokens, cached tokens/request, valid)."""
    llm.engine.config.batch_invariant = invariant
    llm.engine.config.jump_forward = jump
    llm.engine.blocks.enable_prefix_caching = caching
    llm.engine.blocks.clear_cache()
    hits = llm.engine.blocks.stats.hit_tokens
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    seconds = time.perf_counter() - start
    cached = (llm.engine.blocks.stats.hit_tokens - hits) / len(prompts)
    return seconds, sum(len(o.token_ids) for o in outs), cached, sum(valid(o.text) for o in outs)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--hf-batch", type=int, default=16)
    p.add_argument("--invariant", choices=["on", "off", "both"], default="both")
    p.add_argument("--prefix-caching", choices=["on", "off", "both"], default="both",
                   help="rows with the prefix cache (invariance off) and/or without it")
    p.add_argument("--repeat-first", action="store_true")
    p.add_argument("--jump-forward", choices=["on", "off", "both"], default="on",
                   help="deepinfer rows with jump-forward decoding (the default) and/or without it")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every row this many times, alternating engines; report each row's fastest run "
                        "(on a shared machine the load changes between rows)")
    args = p.parse_args()
    setup(args)
    from deepinfer import LLM, SamplingParams

    path = model_dir(args.model)
    rows = []
    for dtype in dtypes(args.dtype):
        llm = LLM(str(path), dtype=dtype)
        prompts = [llm.tokenizer.apply_chat_template(extraction_prompt(i)) for i in range(args.requests)]
        params = SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0, max_tokens=args.max_tokens)
        prompt_tokens = sum(len(llm.tokenizer.encode(x)) for x in prompts) / len(prompts)
        llm.generate(prompts[:2], SamplingParams(json_schema=EXTRACTION_SCHEMA, max_tokens=4))  # compile + warm up
        configs = [(inv, False) for inv in {"on": [True], "off": [False], "both": [False, True]}[args.invariant]]
        configs = configs if args.prefix_caching in ("off", "both") else []
        configs += [(False, True)] if args.prefix_caching in ("on", "both") else []
        if args.repeat_first and configs:
            configs.insert(0, configs[0])
        jumps = {"on": [True], "off": [False], "both": [True, False]}[args.jump_forward]
        runs = [(c, j) for c in configs for j in jumps]
        peer = None
        if not args.no_peer:
            model, tok = hf_model(path, dtype)
            factory = xgrammar_factory(tok, model.config.vocab_size, EXTRACTION_SCHEMA)
            hf_generate(model, tok, prompts[:2], 4, 2, factory)  # untimed warm-up, as deepinfer's
        best: dict = {}
        for _ in range(args.rounds):
            for i, ((invariant, caching), jump) in enumerate(runs):
                result = run_deepinfer(llm, prompts, params, invariant, caching, jump)
                name = (f"deepinfer (invariant {'on' if invariant else 'off'}, prefix cache "
                        f"{'on' if caching else 'off'}, jump-forward {'on' if jump else 'off'})")
                print([name, dtype, *result], flush=True)
                if (i, name) not in best or result[0] < best[(i, name)][0]:
                    best[(i, name)] = result
            if not args.no_peer:
                seconds, tokens, texts = hf_generate(model, tok, prompts, args.max_tokens, args.hf_batch, factory)
                print(["transformers", dtype, seconds, tokens], flush=True)
                if peer is None or seconds < peer[0]:
                    peer = (seconds, tokens, 0, sum(valid(t) for t in texts))
        named = [(name, r) for (_, name), r in best.items()]
        named += [(f"transformers + xgrammar (batch {args.hf_batch})", peer)] if peer else []
        for name, (seconds, tokens, cached, ok) in named:
            ratio = f"{(tokens / seconds) / (peer[1] / peer[0]):.2f}x" if peer else "-"
            rows.append([name, dtype, args.requests, f"{prompt_tokens:.0f}", f"{cached:.0f}", tokens,
                         f"{seconds:.1f}", f"{tokens / seconds:.1f}", ratio, ok])
    table(rows, ["engine", "dtype", "requests", "prompt tok", "cached tok/req", "gen tokens", "seconds", "tok/s",
                 "vs transformers", "valid JSON"])


if __name__ == "__main__":
    main()
