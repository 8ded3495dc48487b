"""Quantized weights on extraction work: 32 concurrent JSON-Schema requests, and greedy agreement with llama.cpp.

    python benchmarks/quant_extract.py --requests 32 --llama-python /tmp/llamacpp-venv/bin/python

Extraction: `--requests` extraction prompts (the engine benchmarks' schema and prompts, ~200 prompt
tokens each) submitted together, greedy, `--max-tokens` each. Rows: deepinfer on the GGUF's
quantized blocks and on its dequantized float32 weights, each with batch invariance on and off
(prefix caching off: every request computes its prompt; speculation off), and llama.cpp on the same
file with its own JSON-Schema grammar. llama-cpp-python serves one sequence per model, so its
requests run one after another: its row is what a user of that library gets, not a batched llama.cpp
server. Runs alternate (A B C ... A B C) for `--rounds` rounds and each row keeps its best; process
CPU time is printed beside wall time, and the load average before and after.

Greedy agreement: `--greedy-prompts` chat prompts decoded greedily for `--greedy-tokens` tokens by
deepinfer (quantized) and llama.cpp: the share of identical outputs and, where they differ, the first
position that does. Both quantize activations to 8 bits per block of 32 for their integer products,
but sum in different orders, so near-ties can break differently.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jsonschema

from engine_common import EXTRACTION_SCHEMA, extraction_prompt
from quant_decode import LlamaCpp, default_gguf
from result_json import add_json_argument, for_script

TOPICS = ["a lighthouse keeper", "the history of tea", "how rainbows form", "a city at night", "learning to swim",
          "the moon landing", "a small bakery", "winter in the mountains", "a robot that paints", "ocean tides",
          "the first bicycle", "a library after closing", "honeybees", "a train journey", "volcanoes",
          "an old map", "chess openings", "a rainy afternoon", "paper airplanes", "the northern lights"]


def valid(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), EXTRACTION_SCHEMA)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


class DeepinferRow:
    def __init__(self, llm, name: str, invariant: bool) -> None:
        self.llm, self.name, self.invariant = llm, name, invariant

    def extract(self, prompts: list[list[int]], max_tokens: int) -> tuple[float, float, int, int]:
        """-> (wall s, CPU s, generated tokens, valid outputs)."""
        from deepinfer import SamplingParams

        engine = self.llm.engine
        engine.config.batch_invariant = self.invariant
        engine.blocks.clear_cache()
        params = SamplingParams(temperature=0, max_tokens=max_tokens, json_schema=EXTRACTION_SCHEMA)
        start, cpu = time.perf_counter(), time.process_time()
        outs = self.llm.generate(prompts, params)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return wall, cpu, sum(len(o.token_ids) for o in outs), sum(valid(o.text) for o in outs)


class LlamaRow:
    def __init__(self, peer: LlamaCpp, threads: int) -> None:
        self.peer, self.threads = peer, threads
        self.name, self.invariant = "llama.cpp (use_extra_bufts=False), one request at a time", None

    def extract(self, prompts: list[list[int]], max_tokens: int) -> tuple[float, float, int, int]:
        self.peer._load(self.threads)
        out = self.peer._ask({"op": "extract", "threads": self.threads, "prompts": prompts,
                              "schema": EXTRACTION_SCHEMA, "tokens": max_tokens})
        return out["wall"], out["cpu"], out["generated"], sum(valid(t) for t in out["texts"])


def load_llms(gguf: str):
    from deepinfer import LLM

    options = dict(enable_prefix_caching=False, speculative=False)
    return LLM(gguf, quantization="gguf", **options), LLM(gguf, quantization=None, **options)


def extraction_table(rows, prompts, args) -> tuple[list[str], list[list]]:
    best: dict[str, tuple] = {}
    for row in rows:  # warm-up: grammar compiled, kernels built, pages faulted in
        row.extract(prompts[:2], 16)
    for _ in range(args.rounds):
        for row in rows:
            result = row.extract(prompts, args.max_tokens)
            if row.name + str(row.invariant) not in best or result[0] < best[row.name + str(row.invariant)][0]:
                best[row.name + str(row.invariant)] = result
    float_off = next(best[r.name + str(r.invariant)] for r in rows if "float32" in r.name and r.invariant is False)
    columns = ["engine", "batch invariant", "requests", "gen tokens", "seconds", "CPU s", "tok/s",
               "vs float32 (invariant off)", "valid JSON"]
    table = []
    for row in rows:
        wall, cpu, tokens, ok = best[row.name + str(row.invariant)]
        table.append([row.name, {True: "on", False: "off", None: "-"}[row.invariant], len(prompts), tokens,
                      round(wall, 2), round(cpu, 2), round(tokens / wall, 1),
                      f"{(tokens / wall) / (float_off[2] / float_off[0]):.2f}x", f"{ok}/{len(prompts)}"])
    return columns, table


def greedy_agreement(llm, peer: LlamaCpp, threads: int, args) -> tuple[list[str], list[list]]:
    from deepinfer import SamplingParams

    tok = llm.tokenizer
    same, first_diffs = 0, []
    params = SamplingParams(temperature=0, max_tokens=args.greedy_tokens)
    peer._load(threads)
    for topic in TOPICS[:args.greedy_prompts]:
        chat = tok.apply_chat_template([{"role": "user", "content": f"Write a paragraph about {topic}."}])
        prompt = chat if isinstance(chat, list) else tok.encode(chat)
        ours = list(llm.generate(prompt, params)[0].token_ids)
        theirs = peer._ask({"op": "greedy", "threads": threads, "prompt": prompt, "tokens": args.greedy_tokens})
        theirs = theirs["tokens"]
        n = min(len(ours), len(theirs))
        diff = next((i for i in range(n) if ours[i] != theirs[i]), None)
        if diff is None and len(ours) == len(theirs):
            same += 1
        else:
            first_diffs.append(n if diff is None else diff)
    columns = ["prompts", "tokens each", "identical outputs", "first divergence: min", "median", "max"]
    spread = ([min(first_diffs), statistics.median(first_diffs), max(first_diffs)] if first_diffs
              else ["-", "-", "-"])
    return columns, [[args.greedy_prompts, args.greedy_tokens, f"{same}/{args.greedy_prompts}", *spread]]


def print_table(title: str, columns: list[str], rows: list[list]) -> None:
    print(f"## {title}")
    widths = [max(len(str(x)) for x in col) for col in zip(columns, *rows)]
    for row in [columns, *rows]:
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gguf", default=None, help="the GGUF all engines run (default: the default model's)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds; each row's best is kept")
    p.add_argument("--greedy-prompts", type=int, default=20)
    p.add_argument("--greedy-tokens", type=int, default=64)
    p.add_argument("--llama-python", default=None, help="a Python with llama-cpp-python (skipped without)")
    add_json_argument(p)
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    gguf = args.gguf or default_gguf()
    load_before = os.getloadavg()
    quant, dense = load_llms(gguf)
    prompts = []
    for i in range(args.requests):
        chat = quant.tokenizer.apply_chat_template(extraction_prompt(i))
        prompts.append(chat if isinstance(chat, list) else quant.tokenizer.encode(chat))
    rows = [DeepinferRow(quant, "deepinfer quantized (gguf)", True), DeepinferRow(quant, "deepinfer quantized (gguf)", False),
            DeepinferRow(dense, "deepinfer float32", True), DeepinferRow(dense, "deepinfer float32", False)]
    peer = LlamaCpp(args.llama_python, gguf) if args.llama_python else None
    if peer is not None:
        rows.append(LlamaRow(peer, args.threads))
    results = for_script(__file__, __doc__)
    columns, table = extraction_table(rows, prompts, args)
    greedy = greedy_agreement(quant, peer, args.threads, args) if peer is not None else None
    load_after = os.getloadavg()
    if peer is not None:
        peer.close()
    note = f"{args.threads} threads; load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)"
    print(f"# {gguf}\n# {note}")
    title = f"{args.requests} concurrent JSON-Schema extraction requests, greedy, max {args.max_tokens} tokens; {note}"
    print_table(title, columns, table)
    results.table(title, columns, table)
    if greedy is not None:
        title = f"Greedy outputs, deepinfer quantized vs llama.cpp on the same file; {note}"
        print_table(title, *greedy)
        results.table(title, *greedy)
    results.write(args.json)


if __name__ == "__main__":
    main()
