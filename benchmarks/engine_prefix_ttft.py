"""Time to first token for a 2,000-token prompt: prefix-cache miss vs hit.

    python benchmarks/engine_prefix_ttft.py --prefix-tokens 2000 --dtype both

The miss computes the whole prompt; the hit sends the same 2,000-token prefix with a different
final question, so only the tokens after the last cached block are computed.
"""

from __future__ import annotations

from engine_common import FILLER, dtypes, model_dir, parser, setup, table
from result_json import for_script


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--prefix-tokens", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    setup(args)
    from deepinfer import LLM, SamplingParams

    path = model_dir(args.model)
    rows = []
    for dtype in dtypes(args.dtype):
        llm = LLM(str(path), dtype=dtype, max_num_batched_tokens=2048)
        ids = llm.tokenizer.encode(FILLER * 60)[:args.prefix_tokens]
        params = SamplingParams(temperature=0, max_tokens=1)
        ordinary = min(40000, llm.tokenizer.vocab_size)  # ids that are text tokens on any model
        for invariant in (True, False):
            llm.engine.config.batch_invariant = invariant
            misses, hits = [], []
            for r in range(args.repeats):
                prefix = [(t + 1 + r + 7 * invariant) % ordinary for t in ids[:8]] + ids[8:]  # a fresh prefix each round
                misses.append(llm.generate([prefix + llm.tokenizer.encode(" Question one?")], params)[0])
                hits.append(llm.generate([prefix + llm.tokenizer.encode(" Another question?")], params)[0])
            miss = min(o.ttft for o in misses)
            hit = min(o.ttft for o in hits)
            rows.append([dtype, "on" if invariant else "off", len(misses[0].prompt_token_ids),
                         hits[0].num_cached_tokens, f"{miss * 1000:.0f}", f"{hit * 1000:.0f}", f"{miss / hit:.1f}x"])
            print(rows[-1], flush=True)
    columns = ["dtype", "invariant", "prompt tokens", "cached on hit", "TTFT miss ms", "TTFT hit ms", "speed-up"]
    table(rows, columns)
    results = for_script(__file__, __doc__)
    results.table("Time to first token: prefix-cache miss vs hit", columns, rows)
    results.write(args.json)


if __name__ == "__main__":
    main()
