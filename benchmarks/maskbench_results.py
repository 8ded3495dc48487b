"""The MaskBench harness's per-engine JSONL results (../shared/maskbench/run.py --out DIR), summarized
in the benchmark-result format of result_json.py, so report.py treats them like any script's results.

A harness file holds one record per schema: status, passing, the counts of valid instances rejected
and invalid ones accepted, compile and first-mask nanoseconds, and every instance's per-token step
times. Percentiles are nearest-rank-below, as the harness's own `summarize` computes them, so the
table matches its summary.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from result_json import FORMAT, Results

METRICS = [  # (row label, summary key, decimals)
    ("schemas run", "schemas", 0), ("passing", "passing", 0), ("compile error", "compile_error", 0),
    ("timeout", "timeout", 0), ("validation error (schemas)", "validation_error", 0),
    ("invalidation error (schemas)", "invalidation_error", 0), ("test instances run", "tests", 0),
    ("valid instances rejected", "valid_rejected", 0), ("invalid instances accepted", "invalid_accepted", 0),
    ("TTFM p50 (ms)", "ttfm_p50", 2), ("TTFM p90 (ms)", "ttfm_p90", 2), ("TTFM p99 (ms)", "ttfm_p99", 2),
    ("TBM p50 (us)", "tbm_p50", 1), ("TBM p90 (us)", "tbm_p90", 1), ("TBM p99 (us)", "tbm_p99", 1),
    ("TBM p99.9 (us)", "tbm_p99.9", 1), ("TBM max (us)", "tbm_max", 0), ("tokens (TBM samples)", "tokens", 0),
]


def pct(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(int(len(sorted_values) * p / 100), len(sorted_values) - 1)]


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ttfm_ms(records: list[dict]) -> list[float]:
    """Compile + first mask per schema that got that far; a schema that timed out before counts as
    the timeout itself (MaskBench's convention)."""
    values = []
    for r in records:
        if r.get("first_mask_ns") is not None and r.get("compile_ns") is not None:
            values.append((r["compile_ns"] + r["first_mask_ns"]) / 1e6)
        elif r["status"] == "timeout":
            values.append(r.get("timeout_s", 0) * 1000.0)
    return sorted(values)


def summarize(records: list[dict]) -> tuple[dict, list[float]]:
    """(summary by METRICS key, sorted TBM samples in us)."""
    tests = [t for r in records for t in r["tests"]]
    steps = sorted(x / 1e3 for t in tests for x in t.get("step_ns", []))
    ttfm = ttfm_ms(records)
    summary = {
        "schemas": len(records), "passing": sum(bool(r.get("passing")) for r in records),
        "compile_error": sum(r["status"] == "compile_error" for r in records),
        "timeout": sum(r["status"] == "timeout" for r in records),
        "validation_error": sum(r.get("n_validation_errors", 0) > 0 for r in records),
        "invalidation_error": sum(r.get("n_invalidation_errors", 0) > 0 for r in records),
        "tests": len(tests), "valid_rejected": sum(t["valid"] and not t["accepted"] for t in tests),
        "invalid_accepted": sum(not t["valid"] and t["accepted"] for t in tests),
        "tbm_max": steps[-1] if steps else None, "tokens": len(steps)}
    for p in (50, 90, 99):
        summary[f"ttfm_p{p}"] = pct(ttfm, p)
    for p in (50, 90, 99, 99.9):
        summary[f"tbm_p{p}"] = pct(steps, p)
    return summary, steps


def engine_label(records: list[dict], path: Path) -> str:
    if records and records[0].get("engine"):
        return f"{records[0]['engine']} {records[0].get('version', '')}".strip()
    return path.stem.removeprefix("results_")


def harness_results(paths: list[Path]) -> dict:
    """One result document (result_json format) comparing the engines of the given harness files."""
    results = Results("maskbench_harness", "MaskBench: JSON Schema masks, engines side by side")
    labels, summaries = [], []
    for path in paths:
        records = read_records(path)
        summary, steps = summarize(records)
        labels.append(engine_label(records, path))
        summaries.append(summary)
        results.distribution(f"{labels[-1]} TBM", steps, "us")
    rows = [[label, *(_fmt(s[key], decimals) for s in summaries)] for label, key, decimals in METRICS]
    results.table("MaskBench harness summary", ["metric", *labels], rows)
    files = " ".join(str(p) for p in paths)
    return {"format": FORMAT, "benchmark": results.benchmark, "title": results.title,
            "command": f"python ../shared/maskbench/harness.py summarize {files}", "environment": {},
            "tables": [vars(t) for t in results.tables], "series": [],
            "distributions": [vars(d) for d in results.distributions]}


def _fmt(value, decimals: int):
    if value is None:
        return "-"
    return round(float(value), decimals) if decimals else int(value)
