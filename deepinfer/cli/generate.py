"""`deepinfer generate "PROMPT"`: print the model's chat reply to a prompt.

Resolves the model (--model, DEEPINFER_MODEL_DIR, or the default model,
created on first use), applies the chat template (with an optional --system
message), and streams the reply to stdout. Errors the user can fix are
`UserError`s, which the dispatcher prints as one paragraph (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

DTYPES = ("float32", "bfloat16")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="the user message")
    parser.add_argument("--model", default=None,
                        help="model directory or .gguf file (default: $DEEPINFER_MODEL_DIR, else "
                             "SmolLM2-135M-Instruct, downloaded and converted on first use)")
    parser.add_argument("--max-tokens", type=_positive_int, default=256,
                        help="most tokens to generate (default 256)")
    parser.add_argument("--temperature", type=_non_negative_float, default=0.0,
                        help="sampling temperature; 0 = greedy (default 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed for sampling (reproducible runs)")
    parser.add_argument("--system", default=None, help="system message placed before the prompt")
    parser.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="weight and activation dtype (default float32)")
    from deepinfer.cli.constraint_args import add_constraint_arguments
    add_constraint_arguments(parser, required=False)  # --schema / --regex / --grammar [--syntax]
    parser.add_argument("--stats", action="store_true",
                        help="print token counts and decode speed to stderr")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def build_messages(prompt: str, system: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system is not None else []
    return [*messages, {"role": "user", "content": prompt}]


def run_constrained(args: argparse.Namespace, constraint: dict) -> int:
    """A constrained reply goes through the engine, which applies the constraint's token masks."""
    from deepinfer import LLM, SamplingParams

    llm = LLM(args.model, dtype=args.dtype)
    prompt = llm.tokenizer.apply_chat_template(build_messages(args.prompt, args.system),
                                               add_generation_prompt=True)
    params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                            **constraint)
    before, start = dict(llm.engine.stats()), time.perf_counter()
    for text in llm.stream(prompt, params):
        sys.stdout.write(text)
        sys.stdout.flush()
    sys.stdout.write("\n")
    if args.stats:  # the engine's own counters: this is its only request
        after, seconds = llm.engine.stats(), time.perf_counter() - start
        generated = after["generation_tokens"] - before["generation_tokens"]
        print(f"prompt {after['prompt_tokens'] - before['prompt_tokens']} tokens, generated {generated} tokens "
              f"(constrained); {seconds:.2f}s, {generated / max(seconds, 1e-9):.1f} tokens/s", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from deepinfer.cli.constraint_args import constraint_from_args
    constraint = constraint_from_args(args)
    if constraint:
        return run_constrained(args, constraint)
    import torch

    from deepinfer.generation import generate
    from deepinfer.model import load_model
    from deepinfer.model.hub import resolve_model
    from deepinfer.tokenizer import Tokenizer

    path = resolve_model(args.model)
    tokenizer = Tokenizer.from_pretrained(path)
    model = load_model(path, dtype=getattr(torch, args.dtype))
    prompt_text = tokenizer.apply_chat_template(build_messages(args.prompt, args.system),
                                                add_generation_prompt=True)
    prompt_ids = tokenizer.encode(prompt_text, add_special_tokens=False)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    try:
        result = generate(model, tokenizer, prompt_ids, max_tokens=args.max_tokens,
                          temperature=args.temperature, seed=args.seed, on_text=write)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `deepinfer generate ... | head`: the reader left, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.stats:
        print(f"prompt {result.prompt_tokens} tokens, generated {len(result.token_ids)} tokens "
              f"({result.finish_reason}); prefill {result.prefill_seconds:.2f}s, decode "
              f"{result.decode_tokens_per_second:.1f} tokens/s", file=sys.stderr)
    return 0
