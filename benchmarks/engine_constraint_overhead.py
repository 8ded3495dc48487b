"""The cost of the constraint: the same batch decoded with and without its JSON Schema.

    python benchmarks/engine_constraint_overhead.py --requests 32 --max-tokens 100 --dtype both

The constrained run goes first; the unconstrained run then decodes exactly as many tokens per
request (`max_tokens` = that request's constrained length, `ignore_eos`), so both runs do the same
forward passes and the difference is the mask work (fill bitmask, apply, accept). The time inside the
mask step is also reported on its own, since wall-clock differences are noisy on a shared machine.
Two engine settings: plain decoding (speculation and jump-forward off: the same steps in both runs,
so the difference is the constraint's own work) and the defaults (both on: jump-forward only exists
with a constraint, and drafts differ between the runs, so the steps differ too).
"""

from __future__ import annotations

import time

from engine_common import EXTRACTION_SCHEMA, dtypes, extraction_prompt, model_dir, parser, setup, table
from result_json import for_script


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--lengths-from-first-run", action="store_true",
                   help="warm up with an untimed constrained run, then time unconstrained before constrained")
    args = p.parse_args()
    setup(args)
    from deepinfer import LLM, SamplingParams

    path = model_dir(args.model)
    rows = []
    mask_seconds = instrument_mask()
    for dtype, defaults in ((d, on) for d in dtypes(args.dtype) for on in (False, True)):
        llm = LLM(str(path), dtype=dtype, enable_prefix_caching=False)
        llm.engine.config.speculative = llm.engine.config.jump_forward = defaults
        prompts = [llm.tokenizer.apply_chat_template(extraction_prompt(i)) for i in range(args.requests)]
        llm.generate(prompts[:2], SamplingParams(json_schema=EXTRACTION_SCHEMA, max_tokens=4))  # compile + warm up
        mask_seconds[0] = 0.0
        constrained_params = SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0, max_tokens=args.max_tokens)
        if args.lengths_from_first_run:  # one extra constrained run, untimed, to learn the lengths
            lengths = [len(o.token_ids) for o in llm.generate(prompts, constrained_params)]
            mask_seconds[0] = 0.0
            start = time.perf_counter()
            free = llm.generate(prompts, [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
                                          for n in lengths])
            t_free = time.perf_counter() - start
        start = time.perf_counter()
        constrained = llm.generate(prompts, constrained_params)
        t_constrained = time.perf_counter() - start
        lengths = [len(o.token_ids) for o in constrained]
        if not args.lengths_from_first_run:
            start = time.perf_counter()
            free = llm.generate(prompts, [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
                                          for n in lengths])
            t_free = time.perf_counter() - start
        assert [len(o.token_ids) for o in free] == lengths
        tokens = sum(lengths)
        setting = "speculative + jump-forward (defaults)" if defaults else "plain decoding"
        rows.append([dtype, setting, args.requests, tokens, f"{t_free:.2f}", f"{t_constrained:.2f}",
                     f"{100 * (t_constrained - t_free) / t_free:+.1f}%", f"{mask_seconds[0]:.2f}",
                     f"{100 * mask_seconds[0] / t_free:.1f}%"])
        print(rows[-1], flush=True)
    columns = ["dtype", "engine", "requests", "tokens", "unconstrained s", "constrained s", "overhead (wall)",
               "mask s", "mask / unconstrained"]
    table(rows, columns)
    results = for_script(__file__, __doc__)
    results.table("Constrained vs unconstrained decoding of the same tokens", columns, rows)
    results.write(args.json)


def instrument_mask() -> list[float]:
    """Seconds spent applying constraint masks to sampled rows (walk the matcher through the row's
    draft, fill and apply its bitmask unless the greedy argmax is allowed), which exists only with a
    constraint: a measure of the overhead that does not depend on the load of a shared machine."""
    from deepinfer.engine.speculation import verify

    total = [0.0]
    apply_masks = verify._apply_masks

    def timed(rows, logits, top):
        start = time.perf_counter()
        try:
            return apply_masks(rows, logits, top)
        finally:
            total[0] += time.perf_counter() - start

    verify._apply_masks = timed
    return total


if __name__ == "__main__":
    main()
