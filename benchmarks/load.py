"""Load on the HTTP server: concurrent streams, cancellations and bad requests, on loopback only.

    python benchmarks/load.py --streams 64 --requests 256
    python benchmarks/load.py --streams 200 --requests 600 --cancel-share 0.3 --bad-share 0.1

Starts `deepinfer serve` on a free loopback port (or uses --url, which must be loopback), then
keeps --streams requests in flight until --requests were sent or --time-limit passed. Each
request is a stream run to its end (half of them JSON-Schema constrained), a stream the client
closes after its first chunks (--cancel-share), or a bad request that must be refused with a
4xx (--bad-share). Prints requests/s, time to first token and latency (p50/p99), errors (a
5xx, an error event in a stream, a bad request not refused, a transport failure), and the
KV blocks in use and the server's resident memory (from /metrics) before and after: once
the load is gone the blocks in use must be back where they were.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np

from result_json import add_json_argument, for_script

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}
# Bodies a hostile or careless client sends; each must be a 4xx and harm nobody else.
BAD_BODIES = [
    b'{"model":"m","prompt":[1000000000],"max_tokens":4}',
    b'{"model":"m","prompt":"x","max_tokens":4,"logprobs":2,"logit_bias":{"5":NaN}}',
    b'{"model":"m","messages":[{"role":"user","content":"\\ud800"}]}',
    b'{"model":"m","messages":' + b"[" * 3000 + b"]" * 3000 + b"}",
    b'{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",'
    b'"json_schema":{"name":"s","schema":{"type":"objekt"}}}}',
    b'{"model":"m","prompt":"x","seed":100000000000000000000000}',
    b'{"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":{}}',
]


@dataclass
class Tally:
    ttft: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    completed: int = 0
    cancelled: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="model dir or GGUF for the server (default: the default model)")
    p.add_argument("--url", default=None, help="a running loopback server instead of starting one")
    p.add_argument("--streams", type=int, default=16, help="requests in flight at once")
    p.add_argument("--requests", type=int, default=64, help="requests to send in all")
    p.add_argument("--time-limit", type=float, default=300.0, help="stop sending new requests after this (s)")
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--cancel-share", type=float, default=0.2, help="share of streams closed after 2 chunks")
    p.add_argument("--bad-share", type=float, default=0.1, help="share of requests that must be refused")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--server-arg", action="append", default=[], help="extra `deepinfer serve` argument")
    add_json_argument(p)
    return p.parse_args()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str | None, extra: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "deepinfer", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning", *(["--model", model] if model else []), *extra]
    proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.time() > deadline:
            proc.terminate()
            raise SystemExit("the server did not come up within 300 s")
        time.sleep(0.2)


def scrape(url: str) -> dict[str, float]:
    """The unlabelled samples of /metrics (name -> value)."""
    values = {}
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, _, value = line.partition(" ")
            values[name] = float(value)
    return values


def kv_blocks_used(metrics: dict[str, float]) -> float:
    return round(metrics.get("deepinfer_kv_cache_usage_ratio", 0) * metrics.get("deepinfer_kv_cache_blocks", 0))


def settle(url: str, timeout_s: float = 60) -> dict[str, float]:
    """/metrics once nothing runs or waits (aborted requests freed), or after `timeout_s`."""
    deadline = time.time() + timeout_s
    while True:
        metrics = scrape(url)
        idle = not metrics.get("deepinfer_running_requests") and not metrics.get("deepinfer_queue_waiting_requests")
        if idle or time.time() > deadline:
            return metrics
        time.sleep(0.2)


def stream_body(i: int, rng: random.Random, max_tokens: int) -> dict:
    body = {"model": "m", "stream": True, "max_tokens": max_tokens, "seed": i,
            "messages": [{"role": "user", "content": f"Describe person number {i} briefly."}]}
    if rng.random() < 0.5:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
    return body


async def run_stream(client: httpx.AsyncClient, body: dict, cancel: bool, tally: Tally) -> None:
    start = time.perf_counter()
    first = None
    chunks = 0
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            tally.errors.append(f"stream answered {r.status_code}: {(await r.aread())[:200]!r}")
            return
        async for line in r.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                tally.errors.append(f"error event: {chunk['error'].get('message', '')[:200]}")
                return
            if first is None and chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - start
            chunks += 1
            if cancel and chunks >= 2:  # leaving the block closes the connection: the server aborts
                tally.cancelled += 1
                return
    tally.completed += 1
    tally.latency.append(time.perf_counter() - start)
    if first is not None:
        tally.ttft.append(first)


async def run_bad(client: httpx.AsyncClient, body: bytes, tally: Tally) -> None:
    path = "/v1/completions" if b'"prompt"' in body else "/v1/chat/completions"
    r = await client.post(path, content=body, headers={"content-type": "application/json"})
    if 400 <= r.status_code < 500:
        tally.refused += 1
    else:
        tally.errors.append(f"bad request answered {r.status_code}: {r.text[:200]}")


async def drive(url: str, args: argparse.Namespace) -> tuple[Tally, float]:
    rng = random.Random(args.seed)
    bad = round(args.requests * args.bad_share)
    cancel = min(round(args.requests * args.cancel_share), args.requests - bad)
    kinds = ["bad"] * bad + ["cancel"] * cancel + ["stream"] * (args.requests - bad - cancel)
    rng.shuffle(kinds)  # exact shares, in an order fixed by the seed
    plan = [(kind, BAD_BODIES[i % len(BAD_BODIES)] if kind == "bad" else stream_body(i, rng, args.max_tokens))
            for i, kind in enumerate(kinds)]
    tally, queue = Tally(), list(reversed(plan))
    stop_at = time.perf_counter() + args.time_limit
    limits = httpx.Limits(max_connections=args.streams + 8, max_keepalive_connections=args.streams + 8)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        async def worker():
            while queue and time.perf_counter() < stop_at:
                kind, payload = queue.pop()
                try:
                    if kind == "bad":
                        await run_bad(client, payload, tally)
                    else:
                        await run_stream(client, payload, kind == "cancel", tally)
                except httpx.HTTPError as exc:
                    tally.errors.append(f"transport: {type(exc).__name__}: {exc}")

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.streams)))
        return tally, time.perf_counter() - start


def ms(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.0f}" if values else "-"


def main() -> None:
    args = parse_args()
    proc = None
    if args.url is None:
        proc, url = start_server(args.model, args.server_arg)
    else:
        url = args.url.rstrip("/")
        if urlsplit(url).hostname not in LOOPBACK:
            raise SystemExit(f"--url must be a loopback address ({', '.join(sorted(LOOPBACK))}), not {url}")
    try:
        warm = asyncio.run(drive(url, argparse.Namespace(**{**vars(args), "requests": 2, "streams": 2,
                                                            "bad_share": 0, "cancel_share": 0})))[0]
        if warm.errors:
            raise SystemExit(f"warm-up failed: {warm.errors[0]}")
        before = settle(url)
        tally, seconds = asyncio.run(drive(url, args))
        after = settle(url)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    sent = tally.completed + tally.cancelled + tally.refused + len(tally.errors)
    columns = ["streams", "requests", "req/s", "TTFT p50 ms", "TTFT p99 ms", "latency p50 ms", "latency p99 ms",
               "completed", "cancelled", "refused", "errors", "KV blocks before", "KV blocks after",
               "RSS before MB", "RSS after MB"]
    rss = [m.get("process_resident_memory_bytes", 0) / 2 ** 20 for m in (before, after)]
    row = [args.streams, sent, f"{sent / seconds:.1f}", ms(tally.ttft, 50), ms(tally.ttft, 99),
           ms(tally.latency, 50), ms(tally.latency, 99), tally.completed, tally.cancelled, tally.refused,
           len(tally.errors), kv_blocks_used(before), kv_blocks_used(after), f"{rss[0]:.0f}", f"{rss[1]:.0f}"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    print("| " + " | ".join(str(c) for c in row) + " |")
    for error in tally.errors[:10]:
        print("error:", error)
    results = for_script(__file__, __doc__)
    results.table("HTTP server under load (loopback)", columns, [row])
    results.distribution("time to first token", [t * 1000 for t in tally.ttft], "ms")
    results.distribution("stream latency", [t * 1000 for t in tally.latency], "ms")
    results.write(args.json)
    if tally.errors or kv_blocks_used(after) > kv_blocks_used(before):
        sys.exit(1)


if __name__ == "__main__":
    main()
