"""benchmarks/load.py, small: a handful of streams, cancellations and bad requests against a
live loopback server on the tiny model; no error, every bad request refused, no KV block left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server_helpers import LiveServer, engine_state

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def load_target(tiny_engine):
    with LiveServer(engine_state(tiny_engine, default_max_tokens=8, max_model_len=2048,
                                 json_whitespace="compact")) as live:
        yield live


def run_load(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / "load.py"), *args], capture_output=True, text=True,
                          timeout=300, cwd=BENCHMARKS)


def test_load_script_on_a_handful_of_streams(load_target, tmp_path):
    out = tmp_path / "load.json"
    result = run_load("--url", load_target.url, "--streams", "6", "--requests", "30", "--max-tokens", "16",
                      "--cancel-share", "0.3", "--bad-share", "0.2", "--time-limit", "120", "--json", str(out))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    table = json.loads(out.read_text())["tables"][0]
    row = dict(zip(table["columns"], table["rows"][0]))
    assert row["requests"] == 30 and row["errors"] == 0
    assert row["refused"] >= 3 and row["cancelled"] >= 3 and row["completed"] >= 10
    assert row["KV blocks after"] == row["KV blocks before"]
    assert float(row["RSS after MB"]) > 0 and row["TTFT p50 ms"] != "-"


def test_load_script_refuses_anything_but_loopback():
    result = run_load("--url", "http://192.0.2.1:8000", "--requests", "1")
    assert result.returncode != 0 and "must be a loopback address" in result.stderr
