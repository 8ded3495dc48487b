"""Prometheus text exposition for `GET /metrics`.

Counters the server owns (requests by route and status, tokens, constraint
compile time) plus gauges read from the engine's `stats()` at scrape time
(queue length, KV usage, prefix-cache hit rate). No client library: the text
format is a few lines.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

_ENGINE_GAUGES = {
    # engine stats key -> (metric name, help)
    "num_waiting": ("deepinfer_queue_waiting_requests", "Requests waiting to be scheduled."),
    "num_running": ("deepinfer_running_requests", "Requests currently running."),
    "kv_usage": ("deepinfer_kv_cache_usage_ratio", "Fraction of KV cache blocks in use."),
    "prefix_cache_hit_rate": ("deepinfer_prefix_cache_hit_rate", "Prefix cache hit rate (tokens)."),
}
_ENGINE_COUNTERS = {
    "num_preemptions": ("deepinfer_engine_preemptions_total", "Requests preempted (KV blocks ran out)."),
    "prefix_cache_hit_tokens": ("deepinfer_prefix_cache_hit_tokens_total",
                                "Prompt tokens served from the prefix cache."),
    "constraint_compile_seconds": ("deepinfer_engine_constraint_compile_seconds_total",
                                   "Time the engine spent compiling constraints (cache hits are free)."),
    "steps": ("deepinfer_engine_steps_total", "Engine steps run."),
}
_STATS_ALIASES = {"waiting": "num_waiting", "queue_length": "num_waiting", "running": "num_running",
                  "kv_cache_usage": "kv_usage", "kv_usage_ratio": "kv_usage",
                  "prefix_hit_rate": "prefix_cache_hit_rate"}


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.compile_seconds = 0.0
        self.compile_count = 0
        self.compile_errors = 0
        self.in_flight = 0

    def record_request(self, route: str, status: int) -> None:
        with self._lock:
            self.requests[(route, status)] += 1

    def record_tokens(self, prompt: int, generated: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt
            self.generation_tokens += generated

    def record_compile(self, seconds: float, ok: bool) -> None:
        with self._lock:
            self.compile_seconds += seconds
            self.compile_count += 1
            self.compile_errors += 0 if ok else 1

    def render(self, engine_stats: dict[str, Any] | None) -> str:
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{labels} {value:g}" for labels, value in samples)

        with self._lock:
            metric("deepinfer_requests_total", "counter", "HTTP requests by route and status.",
                   [(f'{{route="{r}",status="{s}"}}', n) for (r, s), n in sorted(self.requests.items())])
            metric("deepinfer_prompt_tokens_total", "counter", "Prompt tokens processed.",
                   [("", self.prompt_tokens)])
            metric("deepinfer_generation_tokens_total", "counter", "Tokens generated.",
                   [("", self.generation_tokens)])
            metric("deepinfer_requests_in_flight", "gauge", "Requests being served now.",
                   [("", self.in_flight)])
            metric("deepinfer_constraint_compile_seconds", "summary",
                   "Time compiling constraints at admission.",
                   [("_sum", self.compile_seconds), ("_count", self.compile_count)])  # name + suffix
            metric("deepinfer_constraint_compile_errors_total", "counter",
                   "Constraints refused at admission.", [("", self.compile_errors)])
        stats = {_STATS_ALIASES.get(k, k): v for k, v in (engine_stats or {}).items()}
        for table, kind in ((_ENGINE_GAUGES, "gauge"), (_ENGINE_COUNTERS, "counter")):
            for key, (name, help_text) in table.items():
                value = stats.get(key)
                if isinstance(value, (int, float)):
                    metric(name, kind, help_text, [("", float(value))])
        return "\n".join(lines) + "\n"
