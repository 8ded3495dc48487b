"""`GET /metrics`: Prometheus exposition through prometheus_client, one registry per app.

What the server measures: HTTP requests by route and status, tokens, requests in
flight, the process's resident memory and CPU time, constraints compiled or refused at admission, and for every finished
choice its time to first token, time per output token, end-to-end latency (all
three from the choice's submission to the engine) and the engine's queue time
(arrival to first scheduling). What the engine knows (queue length, KV usage,
prefix-cache hits) is read from its `stats()` at scrape time.

Each app gets its own CollectorRegistry, so several servers in one process (tests,
notebooks) never share or clash on a series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector,
                               generate_latest)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Bucket edges in seconds, as vLLM uses them for the same quantities.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0)
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                   240.0, 480.0, 960.0, 1920.0, 7680.0)
COMPILE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

ENGINE_GAUGES = {
    # engine stats key -> (metric name, help)
    "num_waiting": ("deepinfer_queue_waiting_requests", "Requests waiting to be scheduled."),
    "num_running": ("deepinfer_running_requests", "Requests currently running."),
    "kv_usage": ("deepinfer_kv_cache_usage_ratio", "Fraction of KV cache blocks in use."),
    "kv_blocks": ("deepinfer_kv_cache_blocks", "KV cache blocks in the pool."),
    "prefix_cache_hit_rate": ("deepinfer_prefix_cache_hit_rate", "Prefix cache hit rate (tokens)."),
}
ENGINE_COUNTERS = {
    "num_preemptions": ("deepinfer_engine_preemptions", "Requests preempted (KV blocks ran out)."),
    "prefix_cache_hit_tokens": ("deepinfer_prefix_cache_hit_tokens", "Prompt tokens served from the prefix cache."),
    "constraint_compile_seconds": ("deepinfer_engine_constraint_compile_seconds",
                                   "Time the engine spent compiling constraints (cache hits are free)."),
    "steps": ("deepinfer_engine_steps", "Engine steps run."),
}
_STATS_ALIASES = {"waiting": "num_waiting", "queue_length": "num_waiting", "running": "num_running",
                  "kv_cache_usage": "kv_usage", "kv_usage_ratio": "kv_usage",
                  "prefix_hit_rate": "prefix_cache_hit_rate"}


@dataclass(frozen=True)
class ChoiceTiming:
    """One finished choice's latencies in seconds; None where there is nothing to measure
    (no token generated, a single token for the per-token time, an engine that reports no queue)."""

    e2e: float
    ttft: float | None = None
    tpot: float | None = None
    queue: float | None = None


def engine_stats(engine: Any) -> dict[str, Any] | None:
    """The engine's `stats()` as a dict (a dataclass is read field by field), or None."""
    stats = getattr(engine, "stats", None)
    if stats is None:
        return None
    value = stats()
    if hasattr(value, "__dataclass_fields__"):
        value = {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value if isinstance(value, dict) else None


class EngineStatsCollector:
    """The engine's gauges and counters, read when /metrics is scraped."""

    def __init__(self, read: Callable[[], dict[str, Any] | None]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        stats = {_STATS_ALIASES.get(k, k): v for k, v in (self.read() or {}).items()}
        for table, family in ((ENGINE_GAUGES, GaugeMetricFamily), (ENGINE_COUNTERS, CounterMetricFamily)):
            for key, (name, help_text) in table.items():
                value = stats.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    yield family(name, help_text, value=float(value))
        replicas = stats.get("replicas")
        if isinstance(replicas, list):  # a data-parallel pool: the sums above, and each replica's own
            yield from self._per_replica(replicas)

    @staticmethod
    def _per_replica(replicas: list[dict]) -> Iterator[Metric]:
        up = GaugeMetricFamily("deepinfer_replica_up", "Whether a data-parallel replica is alive.", labels=["replica"])
        for replica in replicas:
            up.add_metric([str(replica["index"])], float(bool(replica.get("alive"))))
        yield up
        for key, (name, help_text) in ENGINE_GAUGES.items():
            family = GaugeMetricFamily(name.replace("deepinfer_", "deepinfer_replica_", 1),
                                       f"{help_text} Per data-parallel replica.", labels=["replica"])
            for replica in replicas:
                value = replica.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    family.add_metric([str(replica["index"])], float(value))
            yield family


class Metrics:
    def __init__(self, engine: Any = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("deepinfer_requests", "HTTP requests by route and status.",
                                ["route", "status"], registry=r)
        self.prompt_tokens = Counter("deepinfer_prompt_tokens", "Prompt tokens processed.", registry=r)
        self.generation_tokens = Counter("deepinfer_generation_tokens", "Tokens generated.", registry=r)
        self.in_flight = Gauge("deepinfer_requests_in_flight", "Requests being served now.", registry=r)
        self.compile_errors = Counter("deepinfer_constraint_compile_errors", "Constraints refused at admission.",
                                      registry=r)
        self.compile_time = Histogram("deepinfer:constraint_compile_time_seconds",
                                      "Time compiling a request's constraint at admission.",
                                      buckets=COMPILE_BUCKETS, registry=r)
        self.ttft = Histogram("deepinfer:time_to_first_token_seconds",
                              "Per choice: submission to the engine until its first token.",
                              buckets=TTFT_BUCKETS, registry=r)
        self.tpot = Histogram("deepinfer:time_per_output_token_seconds",
                              "Per choice: mean time between output tokens after the first.",
                              buckets=TPOT_BUCKETS, registry=r)
        self.e2e = Histogram("deepinfer:e2e_request_latency_seconds",
                             "Per choice: submission to the engine until its last token.",
                             buckets=LATENCY_BUCKETS, registry=r)
        self.queue = Histogram("deepinfer:request_queue_time_seconds",
                               "Per choice: the engine's time from arrival to first scheduling.",
                               buckets=LATENCY_BUCKETS, registry=r)
        if engine is not None:
            r.register(EngineStatsCollector(lambda: engine_stats(engine)))
        ProcessCollector(registry=r)  # process_resident_memory_bytes, CPU seconds, open fds (Linux)

    def record_request(self, route: str, status: int) -> None:
        self.requests.labels(route=route, status=str(status)).inc()

    def record_tokens(self, prompt: int, generated: int) -> None:
        self.prompt_tokens.inc(prompt)
        self.generation_tokens.inc(generated)

    def record_compile(self, seconds: float, ok: bool) -> None:
        self.compile_time.observe(seconds)
        if not ok:
            self.compile_errors.inc()

    def record_choice(self, timing: ChoiceTiming) -> None:
        self.e2e.observe(timing.e2e)
        for histogram, value in ((self.ttft, timing.ttft), (self.tpot, timing.tpot), (self.queue, timing.queue)):
            if value is not None:
                histogram.observe(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
