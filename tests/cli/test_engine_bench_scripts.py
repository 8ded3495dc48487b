"""The engine benchmark scripts run end to end on SmolLM2 (tiny settings): they patch engine
internals to time them, so an engine refactor must not leave them broken (slow: loads the model)."""

import subprocess
import sys

import pytest

from deepinfer.cli.bench import benchmarks_dir

RUNS = [
    ("engine_throughput.py", ["--requests", "2", "--max-tokens", "8", "--dtype", "float32", "--no-peer",
                              "--speculative", "both", "--prefix-caching", "on"]),
    ("engine_decode.py", ["--tokens", "4", "--dtype", "float32", "--no-peer"]),
    ("engine_prefix_ttft.py", ["--prefix-tokens", "64", "--dtype", "float32", "--no-peer"]),
    ("kv_tier.py", ["--prefix-tokens", "64", "--repeats", "1"]),
    ("engine_constraint_overhead.py", ["--requests", "2", "--max-tokens", "8", "--dtype", "float32",
                                       "--lengths-from-first-run"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("script, args", RUNS, ids=[r[0] for r in RUNS])
def test_engine_benchmark_script_runs(script, args):
    result = subprocess.run([sys.executable, str(benchmarks_dir() / script), "--threads", "1", *args],
                            capture_output=True, text=True, timeout=900, cwd=benchmarks_dir())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| " in result.stdout  # the results table
