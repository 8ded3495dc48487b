"""llama.cpp as a peer for benchmarks/quant_decode.py, run under another Python (its own venv).

    /tmp/llamacpp-venv/bin/python benchmarks/quant_llama_worker.py

Reads one JSON command per line on stdin and answers one JSON line on stdout:
    {"op": "load", "gguf": PATH, "threads": N}               -> {"ok": true} (replacing any loaded model)
    {"op": "prefill", "threads": N, "prompt": [ids]}         -> {"wall": s, "cpu": s}
    {"op": "decode", "threads": N, "prompt": [ids], "tokens": T}   -> {"wall": s, "cpu": s, "rate": tok/s}
      (wall and CPU time from the first token to the last)
    {"op": "greedy", "threads": N, "prompt": [ids], "tokens": T}   -> {"tokens": [ids]}
    {"op": "extract", "threads": N, "prompts": [[ids]], "schema": {...}, "tokens": T}
        -> {"wall": s, "cpu": s, "generated": n, "texts": [...]}
      (greedy, llama.cpp's own JSON-Schema grammar, one request after another)
Imports nothing of deepinfer (this interpreter does not have it). The model loads with
use_extra_bufts=False: llama.cpp's extra (AMX repacking) buffers segfault on this project's
machines, so llama.cpp runs its AVX-512 kernels on the file's own blocks.
"""

from __future__ import annotations

import json
import sys
import time

import llama_cpp.llama_cpp as native
import numpy as np
from llama_cpp import Llama, LlamaGrammar

_default_params = native.llama_model_default_params


def _params_without_extra_buffers():
    params = _default_params()
    params.use_extra_bufts = False
    return params


native.llama_model_default_params = _params_without_extra_buffers
models: dict[int, Llama] = {}


def decode(llm: Llama, prompt: list[int], tokens: int) -> dict:
    """Greedy decode with the end of text never chosen, timed from the first token on."""
    llm.reset()
    count, first, cpu_first = 0, None, None
    no_eos = {llm.token_eos(): -1e9}
    for _ in llm.create_completion(prompt, max_tokens=tokens, temperature=0, logit_bias=no_eos, stream=True):
        if first is None:
            first, cpu_first = time.perf_counter(), time.process_time()
        count += 1
    wall = time.perf_counter() - first
    return {"wall": wall, "cpu": time.process_time() - cpu_first, "rate": (count - 1) / wall}


def extract(llm: Llama, prompts: list[list[int]], schema: dict, tokens: int) -> dict:
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    texts, generated = [], 0
    start, cpu = time.perf_counter(), time.process_time()
    for prompt in prompts:
        llm.reset()
        out = llm.create_completion(prompt, max_tokens=tokens, temperature=0, grammar=grammar)
        texts.append(out["choices"][0]["text"])
        generated += out["usage"]["completion_tokens"]
    return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu, "generated": generated,
            "texts": texts}


def handle(command: dict) -> dict:
    op = command["op"]
    if op == "load":   # one model at a time: an idle llama.cpp thread pool still polls for work
        models.clear()
        models[command["threads"]] = Llama(model_path=command["gguf"], n_threads=command["threads"],
                                           n_threads_batch=command["threads"], n_ctx=2048, n_batch=512,
                                           verbose=False)
        return {"ok": True}
    llm = models[command["threads"]]
    if op == "extract":
        return extract(llm, command["prompts"], command["schema"], command["tokens"])
    prompt = command["prompt"]
    cpu = time.process_time()
    if op == "prefill":
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}
    if op == "decode":
        return decode(llm, prompt, command["tokens"])
    if op == "greedy":  # argmax of the logits (the library's sampler keeps an earlier call's grammar)
        llm.reset()
        ids = []
        llm.eval(prompt)
        for _ in range(command["tokens"]):
            last = native.llama_get_logits_ith(llm._ctx.ctx, -1)      # [vocab] float32, the last row
            token = int(np.ctypeslib.as_array(last, shape=(llm.n_vocab(),)).argmax())
            ids.append(token)
            if token == llm.token_eos():
                break
            llm.eval([token])
        return {"tokens": ids}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(handle(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
