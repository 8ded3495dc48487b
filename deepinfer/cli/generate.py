"""`deepinfer generate "PROMPT"`: print the model's chat reply to a prompt.

Resolves the model (--model, DEEPINFER_MODEL_DIR, or the default model,
created on first use), applies the chat template (with an optional --system
message), and streams the reply to stdout through the engine, as `LLM.stream_outputs`
does for a library caller: the same sampling, seeds and constraints (--schema / --regex /
--grammar). `--expert-parallel N` and `--prefill-workers 1 --decode-workers 1` run the reply over
several processes (deepinfer.parallel). Errors the user can fix are `UserError`s, which the
dispatcher prints as one paragraph (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys

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
    from deepinfer.cli.quantization_args import add_quantization_argument
    add_quantization_argument(parser)
    from deepinfer.cli.constraint_args import add_constraint_arguments
    add_constraint_arguments(parser, required=False)  # --schema / --regex / --grammar [--syntax]
    parser.add_argument("--stats", action="store_true",
                        help="print token counts and decode speed to stderr")
    parser.add_argument("--expert-parallel", type=_positive_int, default=1, metavar="N",
                        help="DeepSeek MoE models: N processes, each holding 1/N of the routed experts "
                             "(greedy, unconstrained, float32)")
    parser.add_argument("--prefill-workers", type=int, default=0, metavar="P",
                        help="with --decode-workers: prefill on one process, decode on another (1 and 1)")
    parser.add_argument("--decode-workers", type=int, default=0, metavar="D")


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


def kv_blocks_for(prompt_tokens: int, max_tokens: int, context: int, block_size: int) -> int:
    """KV blocks for one request: its prompt and every token it may write (drafts included: they
    never reach past max_tokens), within the context; one block spare. The engine's default pool
    (1 GiB, zero-filled) is sized for many requests; a CLI reply needs a few blocks."""
    tokens = min(prompt_tokens + max_tokens, context)
    return -(-tokens // block_size) + 1


def run(args: argparse.Namespace) -> int:
    """Stream the reply through the engine (`LLM.stream_outputs`), the same path as the library's."""
    from deepinfer.cli.constraint_args import constraint_from_args
    from deepinfer.engine import LLM, Engine, EngineConfig, merge
    from deepinfer.engine.llm import parse_dtype
    from deepinfer.model import load_model
    from deepinfer.model.hub import resolve_model
    from deepinfer.model.quant.choice import resolve_quantization
    from deepinfer.tokenizer import Tokenizer
    from deepinfer.types import SamplingParams

    constraint = constraint_from_args(args)
    path = resolve_model(args.model)
    tokenizer = Tokenizer.from_pretrained(path)
    prompt = tokenizer.encode(tokenizer.apply_chat_template(build_messages(args.prompt, args.system),
                                                            add_generation_prompt=True))
    if args.expert_parallel > 1 or args.prefill_workers or args.decode_workers:
        return _run_parallel(args, path, tokenizer, prompt, constraint)
    weights, quantization = resolve_quantization(path, args.quantization)
    model = load_model(weights, dtype=parse_dtype(args.dtype), quantization=quantization)
    blocks = kv_blocks_for(len(prompt), args.max_tokens, model.config.max_position_embeddings,
                           EngineConfig.block_size)
    llm = LLM.from_engine(Engine(model, tokenizer, EngineConfig(max_num_seqs=1, num_kv_blocks=blocks)))
    params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                            **constraint)
    result = None
    try:
        for delta in llm.stream_outputs(prompt, params):
            _write("".join(part.text for part in delta.outputs if part.index == 0))
            result = merge(result, delta)
        _write("\n")
    except BrokenPipeError:  # `deepinfer generate ... | head`: the reader left, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.stats:
        print(_stats_line(result, constrained=bool(constraint)), file=sys.stderr)
    return 0


def _run_parallel(args: argparse.Namespace, path, tokenizer, prompt: list[int], constraint: dict) -> int:
    """--expert-parallel N or --prefill-workers 1 --decode-workers 1: the reply from several processes."""
    from deepinfer.errors import UserError
    from deepinfer.parallel import generate_disaggregated, generate_expert_parallel
    from deepinfer.types import SamplingParams

    if args.expert_parallel > 1 and (args.prefill_workers or args.decode_workers):
        raise UserError("--expert-parallel cannot be combined with --prefill-workers/--decode-workers")
    if args.expert_parallel > 1:
        if args.temperature != 0 or constraint:
            raise UserError("--expert-parallel generates greedily and unconstrained: drop --temperature and "
                            "--schema/--regex/--grammar")
        ranks = [[(prompt, args.max_tokens)]] + [[] for _ in range(args.expert_parallel - 1)]
        tokens = generate_expert_parallel(path, ranks).outputs[0][0].tokens
        _write(tokenizer.decode(tokens) + "\n")
        return 0
    if (args.prefill_workers, args.decode_workers) != (1, 1):
        raise UserError(f"--prefill-workers {args.prefill_workers} --decode-workers {args.decode_workers}: "
                        "only one prefill and one decode worker (1 and 1) are supported")
    params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed, **constraint)
    out = generate_disaggregated(path, [prompt], params)[0]
    _write(out.text + "\n")
    if args.stats:
        print(f"prompt {len(prompt)} tokens, generated {len(out.token_ids)} tokens; "
              f"{out.blocks_moved} KV blocks ({out.bytes_moved} bytes) moved to the decode worker", file=sys.stderr)
    return 0


def _write(text: str) -> None:
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def _stats_line(result, constrained: bool) -> str:
    """Token counts, why the reply ended, time to the first token and the decode rate after it."""
    out = result.outputs[0]
    generated, total = len(out.token_ids), result.total_time or 0.0
    first = result.ttft if result.ttft is not None else total  # a fully forced reply samples nothing
    decode = total - first
    rate = (generated - 1) / decode if generated > 1 and decode > 0 else 0.0
    kind = " (constrained)" if constrained else ""
    return (f"prompt {len(result.prompt_token_ids)} tokens, generated {generated} tokens{kind}, finished by "
            f"{out.finish_reason.value}; first token {first:.2f}s, decode {rate:.1f} tokens/s")
