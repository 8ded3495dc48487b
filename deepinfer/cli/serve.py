"""`deepinfer serve`: the OpenAI- and Anthropic-compatible HTTP server.

Routes: /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages,
/v1/models, /health, /metrics. With --api-key (or $DEEPINFER_API_KEY) every
route but /health requires `Authorization: Bearer KEY` or `x-api-key: KEY`.
"""

from __future__ import annotations

import argparse

from deepinfer import envs


def _mebibytes(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; 0 turns the limit off")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None,
                        help="model directory or .gguf file (default: $DEEPINFER_MODEL_DIR, else "
                             "SmolLM2-135M-Instruct, downloaded and converted on first use)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--api-key", default=envs.API_KEY.text() or None,
                        help="require this key on every route but /health (default: $DEEPINFER_API_KEY)")
    parser.add_argument("--served-model-name", default=None,
                        help="the model id reported by /v1/models (default: the model's name)")
    parser.add_argument("--max-tokens-default", type=int, default=512,
                        help="max_tokens for requests that set none (default 512)")
    parser.add_argument("--reasoning-aware", action="store_true",
                        help="apply constraints only after the model's </think> (per-request "
                             "field 'reasoning_aware' overrides)")
    parser.add_argument("--reasoning-end", default="</think>",
                        help="the text (or single token) that ends a thinking model's reasoning "
                             "(default </think>)")
    parser.add_argument("--json-whitespace", choices=("default", "compact", "unbounded"), default=None,
                        help="whitespace JSON Schema outputs may contain: default (pretty-printer "
                             "style, bounded runs), compact (none) or unbounded")
    parser.add_argument("--compile-timeout", type=float, default=60.0,
                        help="seconds a request's constraint may take to compile before a 400 (default 60)")
    parser.add_argument("--compile-memory", type=_mebibytes, default=2048, metavar="MB",
                        help="MiB the process's resident memory may grow by while a request's constraint "
                             "compiles before a 400; compiles running at once count each other's growth "
                             "(default 2048; 0: no limit)")
    parser.add_argument("--compile-workers", type=int, default=4,
                        help="constraints compiled at once at admission; more wait in arrival order (default 4)")
    parser.add_argument("--max-body-bytes", type=int, default=4 << 20,
                        help="larger request bodies are refused with 413 before parsing (default 4 MiB)")
    parser.add_argument("--allowed-hosts", nargs="*", default=(),
                        help="without --api-key, Host names accepted besides localhost/127.0.0.1/[::1]")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default=None,
                        help="weight and activation dtype (default: the engine's)")
    parser.add_argument("--batch-invariant", action=argparse.BooleanOptionalAction, default=None,
                        help="a request's tokens do not depend on the other requests in its batch (seeded "
                             "sampling reproducible under any traffic). Default: on for quantized weights, "
                             "where it costs about 1%%; off for float weights, where it is 1.4-3x slower")
    parser.add_argument("--no-speculative", action="store_true",
                        help="turn off speculative decoding with n-gram drafts (on by default; outputs are "
                             "the same either way, only speed differs)")
    parser.add_argument("--no-jump-forward", action="store_true",
                        help="sample text the constraint forces instead of appending it (on by default)")
    parser.add_argument("--swa-replay", choices=("bounded", "exact"), default=None,
                        help="how a prefix-cache hit or a preempted request rebuilds the sliding-window KV "
                             "the cache does not keep: bounded (replay --swa-replay-tokens tokens; "
                             "DeepSeek-V4's default) or exact (output equals a cold run; the default of "
                             "sliding-window models)")
    parser.add_argument("--swa-replay-tokens", type=int, default=None,
                        help="tokens a bounded replay recomputes (default 140)")
    parser.add_argument("--kv-tier-dir", default=None,
                        help="write prefix KV blocks to files here and load them back on a prefix miss, "
                             "also after a restart (default: no disk tier)")
    parser.add_argument("--kv-tier-bytes", type=int, default=None,
                        help="bound on the block files under --kv-tier-dir (default 8 GiB)")
    parser.add_argument("--kv-tier-host-bytes", type=int, default=None,
                        help="bound on prefix KV blocks kept in host memory (default 0: none)")
    parser.add_argument("--data-parallel", type=int, default=1, metavar="N",
                        help="engine replicas, each a full engine in its own Ray actor (default 1: no Ray); "
                             "needs pip install 'deepinfer[dist]'")
    parser.add_argument("--router", choices=("cache_aware", "round_robin", "least_loaded"), default="cache_aware",
                        help="how requests are spread over replicas (default cache_aware: the replica "
                             "caching the longest prefix of the prompt, bounded by load)")
    parser.add_argument("--ray-address", default=None,
                        help="join this Ray cluster (host:port or auto) instead of starting a local one")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    from deepinfer.cli.quantization_args import add_quantization_argument
    add_quantization_argument(parser)


def run(args: argparse.Namespace) -> int:
    from deepinfer.server.serve import serve

    engine_kwargs = {"dtype": args.dtype} if args.dtype else {}
    if args.quantization != "auto":
        engine_kwargs["quantization"] = args.quantization
    if args.batch_invariant is not None:
        engine_kwargs["batch_invariant"] = args.batch_invariant
    if args.no_speculative:
        engine_kwargs["speculative"] = False
    if args.no_jump_forward:
        engine_kwargs["jump_forward"] = False
    if args.swa_replay is not None:
        engine_kwargs["swa_replay"] = args.swa_replay
    if args.swa_replay_tokens is not None:
        engine_kwargs["swa_replay_tokens"] = args.swa_replay_tokens
    for option in ("kv_tier_dir", "kv_tier_bytes", "kv_tier_host_bytes"):
        if getattr(args, option) is not None:
            engine_kwargs[option] = getattr(args, option)
    serve(args.model, host=args.host, port=args.port, api_key=args.api_key,
          model_name=args.served_model_name, reasoning_aware=args.reasoning_aware,
          default_max_tokens=args.max_tokens_default, engine_kwargs=engine_kwargs, log_level=args.log_level,
          json_whitespace=args.json_whitespace, reasoning_end=args.reasoning_end,
          compile_timeout_s=args.compile_timeout, compile_workers=args.compile_workers,
          compile_memory_bytes=(args.compile_memory << 20) or None,
          max_body_bytes=args.max_body_bytes, allowed_hosts=tuple(args.allowed_hosts),
          data_parallel=args.data_parallel, router=args.router, ray_address=args.ray_address)
    return 0
