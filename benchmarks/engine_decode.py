"""Single-stream decode tokens/s: deepinfer vs transformers generate (and llama.cpp if installed).

    python benchmarks/engine_decode.py --tokens 128 --dtype both

Greedy, `ignore_eos`, a short chat prompt; decode rate = (tokens - 1) / (total - time to first token).
llama.cpp (`llama-cpp-python`, same GGUF, same thread count) runs only when the package is importable:
it compiles from source in about 8 minutes, so it is not a dependency.
"""

from __future__ import annotations

import time

import torch

from engine_common import dtypes, hf_model, model_dir, parser, setup, table
from result_json import for_script

PROMPT = [{"role": "user", "content": "Write a short story about a lighthouse keeper and a cat."}]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--gguf", default=None, help="GGUF for llama.cpp (default: the default model's GGUF)")
    args = p.parse_args()
    setup(args)
    from deepinfer import LLM, SamplingParams

    path = model_dir(args.model)
    rows = []
    for dtype in dtypes(args.dtype):
        llm = LLM(str(path), dtype=dtype)
        prompt = llm.tokenizer.apply_chat_template(PROMPT)
        params = SamplingParams(temperature=0, max_tokens=args.tokens, ignore_eos=True)
        llm.generate(prompt, SamplingParams(max_tokens=4))
        # Speculation (on by default) turns a repetitive greedy continuation into several tokens per
        # forward pass, so plain decode (speculative off) is the like-for-like row against the peers.
        for invariant, speculative in ((True, False), (False, False), (False, True)):
            llm.engine.config.batch_invariant = invariant
            llm.engine.config.speculative = speculative
            llm.engine.reset_speculator()
            start = time.perf_counter()
            out = llm.generate(prompt, params)[0]
            total = time.perf_counter() - start
            rate = (len(out.token_ids) - 1) / (total - out.ttft)
            rows.append([f"deepinfer (invariant {'on' if invariant else 'off'}, speculative "
                         f"{'on' if speculative else 'off'})", dtype, f"{rate:.1f}", f"{out.ttft * 1000:.0f}"])
            print(rows[-1], flush=True)
        if not args.no_peer:
            model, tok = hf_model(path, dtype)
            ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
            with torch.no_grad():
                model.generate(**ids, max_new_tokens=4, do_sample=False)
                start = time.perf_counter()
                model.generate(**ids, max_new_tokens=1, do_sample=False)
                ttft = time.perf_counter() - start
                start = time.perf_counter()
                model.generate(**ids, max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False)
                total = time.perf_counter() - start
            rows.append(["transformers generate", dtype, f"{(args.tokens - 1) / (total - ttft):.1f}",
                         f"{ttft * 1000:.0f}"])
            print(rows[-1], flush=True)
    rows += llama_cpp(args)
    columns = ["engine", "dtype", "decode tok/s", "TTFT ms"]
    table(rows, columns)
    results = for_script(__file__, __doc__)
    results.table("Single-stream decode", columns, rows)
    results.write(args.json)


def llama_cpp(args) -> list[list]:
    """llama.cpp on the Q4_1 GGUF (the quantized file the default model is converted from)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        print("# llama-cpp-python not installed: llama.cpp row skipped")
        return []
    from deepinfer.model import hub

    gguf = args.gguf or str(hub.cache_dir() / "test-files" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    llm = Llama(model_path=gguf, n_threads=args.threads, n_threads_batch=args.threads, n_ctx=1024,
                verbose=False)
    prompt = "<|im_start|>user\n" + PROMPT[0]["content"] + "<|im_end|>\n<|im_start|>assistant\n"
    no_eos = {llm.token_eos(): -1e9}  # like ignore_eos: always `args.tokens` tokens
    llm(prompt, max_tokens=4, temperature=0)  # warm-up
    llm.reset()                               # and forget its KV: the timed run computes the prompt
    start = time.perf_counter()
    first, count = None, 0
    for _ in llm(prompt, max_tokens=args.tokens, temperature=0, logit_bias=no_eos, stream=True):
        count += 1
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    return [["llama.cpp (Q4_1 GGUF)", "q4_1", f"{(count - 1) / (end - first):.1f}", f"{(first - start) * 1000:.0f}"]]


if __name__ == "__main__":
    main()
