"""32 concurrent JSON-Schema extraction requests: deepinfer vs transformers generate + xgrammar.

    python benchmarks/engine_throughput.py --requests 32 --max-tokens 100 --dtype both

Both sides decode greedily on the same weights; tokens/s counts generated tokens over wall time.
Each output is validated against the schema (jsonschema) and the count of valid outputs reported.
"""

from __future__ import annotations

import json
import time

import jsonschema

from engine_common import (EXTRACTION_SCHEMA, dtypes, extraction_prompt, hf_generate, hf_model, model_dir, parser,
                           setup, table, xgrammar_processor)


def valid(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), EXTRACTION_SCHEMA)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--hf-batch", type=int, default=16)
    p.add_argument("--invariant", choices=["on", "off", "both"], default="both")
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
        modes = {"on": [True], "off": [False], "both": [True, False]}[args.invariant]
        for invariant in modes:
            llm.engine.config.batch_invariant = invariant
            llm.engine.blocks.enable_prefix_caching = False     # every request computes its prompt
            start = time.perf_counter()
            outs = llm.generate(prompts, params)
            seconds = time.perf_counter() - start
            tokens = sum(len(o.token_ids) for o in outs)
            rows.append([f"deepinfer (invariant {'on' if invariant else 'off'})", dtype, args.requests,
                         f"{prompt_tokens:.0f}", tokens, f"{seconds:.1f}", f"{tokens / seconds:.1f}",
                         sum(valid(o.text) for o in outs)])
            print(rows[-1], flush=True)
        if not args.no_peer:
            model, tok = hf_model(path, dtype)
            vocab = model.config.vocab_size
            factory = lambda: xgrammar_processor(tok, vocab, EXTRACTION_SCHEMA)  # noqa: E731
            seconds, tokens, texts = hf_generate(model, tok, prompts, args.max_tokens, args.hf_batch, factory)
            rows.append([f"transformers + xgrammar (batch {args.hf_batch})", dtype, args.requests,
                         f"{prompt_tokens:.0f}", tokens, f"{seconds:.1f}", f"{tokens / seconds:.1f}",
                         sum(valid(t) for t in texts)])
            print(rows[-1], flush=True)
    table(rows, ["engine", "dtype", "requests", "prompt tok", "gen tokens", "seconds", "tok/s", "valid JSON"])


if __name__ == "__main__":
    main()
