"""`deepinfer bench`: dispatch to the benchmark scripts, clear errors without a checkout."""

import subprocess
import sys

from deepinfer.cli import main
from deepinfer.cli.bench import BENCHMARKS, benchmarks_dir


def test_every_listed_benchmark_script_exists():
    for script, _ in BENCHMARKS.values():
        assert (benchmarks_dir() / script).is_file(), script


def test_script_help_runs_through_the_cli():
    result = subprocess.run([sys.executable, "-m", "deepinfer", "bench", "masks", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "MaskBench" in result.stdout


def test_missing_benchmarks_folder_is_a_user_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DEEPINFER_BENCHMARKS_DIR", str(tmp_path / "nowhere"))
    assert main(["bench", "regex"]) == 2
    err = capsys.readouterr().err
    assert "benchmarks folder" in err and "Traceback" not in err
