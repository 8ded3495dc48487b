"""benchmarks/report.py turns real benchmark results into docs/benchmarks.md and its plots.

The benchmark scripts run at a tiny size (a tiny random model, a tiny tokenizer) with --json,
then report.py reads the folder; the page must hold their commands and numbers, and the PNGs
it names must exist.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_script(script: str, *args: str) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from deepinfer.testing import make_tiny_model_dir

    base = tmp_path_factory.mktemp("report")
    model = make_tiny_model_dir(base / "model")
    folder = base / "results"
    run_script("engine_throughput.py", "--model", str(model), "--no-peer", "--requests", "1", "2",
               "--max-tokens", "4", "--dtype", "float32", "--threads", "1", "--invariant", "off",
               "--speculative", "off", "--prefix-caching", "on", "--json", str(folder / "throughput.json"))
    run_script("regex_masks.py", "--tokenizer", str(model / "tokenizer.json"), "--vocab-size", "384",
               "--only", "ISO date", "--json", str(folder / "regex.json"))
    return folder


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_scripts_write_their_tables_series_and_distributions(results):
    throughput = read(results / "throughput.json")
    assert throughput["benchmark"] == "engine_throughput" and "--json" not in throughput["command"]
    assert throughput["command"].startswith("python benchmarks/engine_throughput.py --model ")
    (table,) = throughput["tables"]
    assert [row[2] for row in table["rows"]] == [1, 2]  # one row per request count
    (line,) = throughput["series"]
    assert [x for x, _ in line["points"]] == [1.0, 2.0]
    regex = read(results / "regex.json")
    assert [row[0] for row in regex["tables"][0]["rows"]] == ["ISO date"]
    names = [d["name"] for d in regex["distributions"]]
    assert names == ["deepinfer, first pass", "deepinfer, masks cached", "outlines-core"]
    for dist in regex["distributions"]:
        values = [v for _, v in dist["quantiles"]]
        assert dist["count"] > 0 and values == sorted(values)


def test_report_holds_the_numbers_and_plots(results, tmp_path):
    out = tmp_path / "docs" / "benchmarks.md"
    result = subprocess.run([sys.executable, str(BENCHMARKS / "report.py"), str(results), "--out", str(out)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    throughput = read(results / "throughput.json")
    regex = read(results / "regex.json")
    assert throughput["command"] in page and regex["command"] in page
    for row in throughput["tables"][0]["rows"]:
        assert f"| {row[7]} |" in page  # tokens/s of every row
    first_pass = regex["distributions"][0]
    assert f"| {first_pass['name']} | {first_pass['count']:,} |" in page
    images = [line.split("](")[1].rstrip(")") for line in page.splitlines() if line.startswith("![")]
    assert sorted(images) == ["img/engine_throughput_throughput.png", "img/regex_masks_step_times.png"]
    for image in images:
        assert (out.parent / image).read_bytes().startswith(PNG_MAGIC)


def test_harness_results_are_summarized_per_engine(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from maskbench_results import harness_results
    finally:
        sys.path.remove(str(BENCHMARKS))
    record = {"id": "a.json", "engine": "deepinfer", "version": "0.1.0", "status": "done", "passing": True,
              "n_validation_errors": 0, "n_invalidation_errors": 0, "compile_ns": 2_000_000,
              "first_mask_ns": 1_000_000, "timeout_s": 30,
              "tests": [{"valid": True, "accepted": True, "step_ns": [10_000, 30_000, 20_000]},
                        {"valid": False, "accepted": False, "step_ns": [40_000]}]}
    refused = {**record, "id": "b.json", "status": "compile_error", "passing": False, "compile_ns": None,
               "first_mask_ns": None, "tests": []}
    path = tmp_path / "results_deepinfer.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(refused) + "\n")
    document = harness_results([path])
    rows = {row[0]: row[1] for row in document["tables"][0]["rows"]}
    assert rows["schemas run"] == 2 and rows["passing"] == 1 and rows["compile error"] == 1
    assert rows["TTFM p50 (ms)"] == 3.0 and rows["TBM p50 (us)"] == 30.0 and rows["TBM max (us)"] == 40
    (dist,) = document["distributions"]
    assert dist["name"] == "deepinfer 0.1.0 TBM" and dist["count"] == 4


def test_report_refuses_a_file_that_is_not_a_result(tmp_path):
    (tmp_path / "other.json").write_text('{"hello": 1}')
    result = subprocess.run([sys.executable, str(BENCHMARKS / "report.py"), str(tmp_path), "--out",
                             str(tmp_path / "out.md")], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "not a benchmark result" in result.stderr
