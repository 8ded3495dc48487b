"""Quantized weights on the CPU: deepinfer on a GGUF's blocks vs deepinfer float32 vs llama.cpp, same file.

    python benchmarks/quant_decode.py --threads 1,2 --llama-python /tmp/llamacpp-venv/bin/python

Per thread count: decode tokens/s at batch 1 (greedy, the end of text never chosen, timed from the
first token on) and the time to prefill a 512-token prompt (prefix caching off; deepinfer's
time to first token of a 1-token request, llama.cpp's `eval`). Engines run alternately, A B C A B C
for `--rounds` rounds, keeping each one's best, so that a burst of load on a shared machine hits
them alike; process CPU time is reported beside wall time (CPU / wall near the thread count: the
threads were busy; well below it: they waited). The load average before and after is printed.
Speculation is off (its drafts would make a repetitive greedy text faster for deepinfer only).

llama.cpp runs through `quant_llama_worker.py` under `--llama-python`, an interpreter with
`llama-cpp-python` installed (built from source in its own venv, so never a dependency here).
It loads with use_extra_bufts=False: its AMX repacking buffers segfault on this project's machines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from result_json import add_json_argument, for_script

PROMPT = [{"role": "user", "content": "Write a short story about a lighthouse keeper and a cat."}]
LONG_TEXT = ("The lighthouse stood at the end of the rocky point, and every night its keeper climbed the "
             "hundred and twelve steps to light the lamp. Ships passed far out on the dark water; a cat "
             "slept on the warm stones by the door. ")


@dataclass
class Best:
    rate: float = 0.0            # decode tokens/s
    decode_cpu: float = 0.0      # CPU s / wall s while decoding, of the best run
    prefill: float = float("inf")
    prefill_cpu: float = 0.0

    def add_decode(self, rate: float, wall: float, cpu: float) -> None:
        if rate > self.rate:
            self.rate, self.decode_cpu = rate, cpu / wall

    def add_prefill(self, wall: float, cpu: float) -> None:
        if wall < self.prefill:
            self.prefill, self.prefill_cpu = wall, cpu


class Deepinfer:
    def __init__(self, name: str, gguf: str, quantization: str | None) -> None:
        from deepinfer import LLM

        self.name = name
        self.llm = LLM(gguf, quantization=quantization, enable_prefix_caching=False, speculative=False)

    def decode(self, threads: int, prompt: list[int], tokens: int) -> tuple[float, float, float]:
        from deepinfer import SamplingParams

        torch.set_num_threads(threads)
        params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
        count, first, cpu_first = 0, None, None
        for delta in self.llm.stream_outputs(prompt, params):
            if first is None:
                first, cpu_first = time.perf_counter(), time.process_time()
            count += len(delta.outputs[0].token_ids)
        wall = time.perf_counter() - first
        return (count - 1) / wall, wall, time.process_time() - cpu_first

    def prefill(self, threads: int, prompt: list[int]) -> tuple[float, float]:
        from deepinfer import SamplingParams

        torch.set_num_threads(threads)
        cpu, start = time.process_time(), time.perf_counter()
        self.llm.generate(prompt, SamplingParams(temperature=0, max_tokens=1))
        return time.perf_counter() - start, time.process_time() - cpu

    def weight_bytes(self) -> int:
        model = self.llm.engine.model
        total = sum(p.numel() * p.element_size() for p in model.parameters())
        for module in model.modules():
            for weight in (getattr(module, "quantized", None) or []):
                total += weight.nbytes
        head = getattr(model.embedding, "head_q", None)
        return total + (head.nbytes if head is not None else 0)


class LlamaCpp:
    def __init__(self, python: str, gguf: str) -> None:
        self.name = "llama.cpp (use_extra_bufts=False)"
        self.gguf, self.threads = gguf, None
        worker = Path(__file__).with_name("quant_llama_worker.py")
        self.process = subprocess.Popen([python, str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)

    def _load(self, threads: int) -> None:
        """One model loaded at a time, with its thread count (llama.cpp fixes it at load)."""
        if threads != self.threads:
            self._ask({"op": "load", "gguf": self.gguf, "threads": threads})
            self.threads = threads

    def _ask(self, command: dict) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the llama.cpp worker exited (status {self.process.wait()})")
        return json.loads(line)

    def decode(self, threads: int, prompt: list[int], tokens: int) -> tuple[float, float, float]:
        self._load(threads)
        out = self._ask({"op": "decode", "threads": threads, "prompt": prompt, "tokens": tokens})
        return out["rate"], out["wall"], out["cpu"]

    def prefill(self, threads: int, prompt: list[int]) -> tuple[float, float]:
        self._load(threads)
        out = self._ask({"op": "prefill", "threads": threads, "prompt": prompt})
        return out["wall"], out["cpu"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def default_gguf() -> str:
    from deepinfer.model import hub

    kept = hub.kept_gguf(hub.ensure_default_model())
    if kept is None:
        raise SystemExit("the default model keeps no GGUF; pass --gguf PATH")
    return str(kept)


def long_prompt(tokenizer, length: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < length:
        ids += tokenizer.encode(LONG_TEXT)
    return ids[:length]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gguf", default=None, help="the GGUF all engines run (default: the default model's)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--tokens", type=int, default=128, help="decoded tokens per run")
    p.add_argument("--prompt-tokens", type=int, default=512, help="tokens of the prefill prompt")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds; each engine's best is kept")
    p.add_argument("--llama-python", default=None, help="a Python with llama-cpp-python (skipped without)")
    add_json_argument(p)
    args = p.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    gguf = args.gguf or default_gguf()
    load_before = os.getloadavg()
    engines = [Deepinfer("deepinfer quantized (gguf)", gguf, "gguf"), Deepinfer("deepinfer float32", gguf, None)]
    if args.llama_python:
        engines.append(LlamaCpp(args.llama_python, gguf))
    tokenizer = engines[0].llm.tokenizer
    chat = tokenizer.apply_chat_template(PROMPT)
    prompt = chat if isinstance(chat, list) else tokenizer.encode(chat)
    prefill_prompt = long_prompt(tokenizer, args.prompt_tokens)
    best = {(e.name, n): Best() for e in engines for n in threads}
    for n in threads:
        for engine in engines:   # warm-up: first calls build kernels and fault pages in
            engine.decode(n, prompt, 8)
            engine.prefill(n, prefill_prompt[:64])
        for _ in range(args.rounds):
            for engine in engines:
                best[engine.name, n].add_decode(*engine.decode(n, prompt, args.tokens))
                best[engine.name, n].add_prefill(*engine.prefill(n, prefill_prompt))
    load_after = os.getloadavg()
    columns = ["engine", "threads", "decode tok/s", "decode CPU/wall", f"prefill {args.prompt_tokens} ms",
               "prefill CPU ms"]
    rows = [[name, n, round(b.rate, 1), round(b.decode_cpu, 2), round(b.prefill * 1000, 1),
             round(b.prefill_cpu * 1000, 1)] for (name, n), b in best.items()]
    for engine in engines:
        if isinstance(engine, LlamaCpp):
            engine.close()
    weights = engines[0].weight_bytes()
    notes = [f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)",
             f"quantized weights resident: {weights / 1e6:.1f} MB; at the best batch-1 rate that reads "
             f"{weights * max(best[engines[0].name, n].rate for n in threads) / 1e9:.1f} GB/s"]
    print(f"# {gguf}")
    for line in notes:
        print(f"# {line}")
    widths = [max(len(str(x)) for x in col) for col in zip(columns, *rows)]
    for row in [columns, *rows]:
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))
    results = for_script(__file__, __doc__)
    results.table(f"Batch-1 decode and prefill on {Path(gguf).name}; " + "; ".join(notes), columns, rows)
    results.write(args.json)


if __name__ == "__main__":
    main()
