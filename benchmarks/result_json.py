"""Benchmark results as JSON: what every script's `--json PATH` writes and `report.py` reads.

One file per run, format 1:

    {"format": 1, "benchmark": "engine_throughput", "title": "...",
     "command": "python benchmarks/engine_throughput.py --requests 32 ...",   # as run, without --json
     "environment": {"python": ..., "platform": ..., "processor": ..., "cpus": ..., "deepinfer": ..., ...},
     "tables": [{"title": ..., "columns": [...], "rows": [[...], ...]}],        # what the script prints
     "series": [{"name": ..., "x_label": ..., "y_label": ..., "points": [[x, y], ...]}],
     "distributions": [{"name": ..., "unit": "us", "count": n, "mean": m,
                        "quantiles": [[q, value], ...]}]}

Series are line plots (tokens/s against concurrency); distributions keep a fixed set of quantiles
of per-step times instead of every sample (a MaskBench run has ~150,000 steps), enough to draw
their cumulative distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

FORMAT = 1
QUANTILES = (0, 1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97.5, 99, 99.5, 99.8, 99.9, 99.95,
             99.99, 100)
PACKAGES = ("deepinfer", "torch", "numpy", "transformers", "xgrammar", "llguidance", "outlines-core")


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list]


@dataclass
class Series:
    name: str
    x_label: str
    y_label: str
    points: list[list[float]]


@dataclass
class Distribution:
    name: str
    unit: str
    count: int
    mean: float
    quantiles: list[list[float]]


@dataclass
class Results:
    benchmark: str
    title: str
    tables: list[Table] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    distributions: list[Distribution] = field(default_factory=list)

    def table(self, title: str, columns: list[str], rows: list[list]) -> None:
        self.tables.append(Table(title, [str(c) for c in columns], [[_cell(x) for x in row] for row in rows]))

    def line(self, name: str, x_label: str, y_label: str, points: list[tuple[float, float]]) -> None:
        self.series.append(Series(name, x_label, y_label, [[float(x), float(y)] for x, y in points]))

    def distribution(self, name: str, values, unit: str) -> None:
        """Quantiles of `values` (already in `unit`); an empty sample is skipped."""
        data = np.asarray(list(values), dtype=float)
        if data.size == 0:
            return
        levels = np.percentile(data, QUANTILES)
        self.distributions.append(Distribution(name, unit, int(data.size), float(data.mean()),
                                               [[q, float(v)] for q, v in zip(QUANTILES, levels)]))

    def write(self, path: str | os.PathLike | None) -> None:
        """Write the results to `path` (nothing when it is None, i.e. no --json given)."""
        if path is None:
            return
        body = {"format": FORMAT, "benchmark": self.benchmark, "title": self.title, "command": command_line(),
                "environment": environment(), **{k: v for k, v in asdict(self).items()
                                                 if k not in ("benchmark", "title")}}
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the results as JSON here (read by benchmarks/report.py)")


def for_script(script_file: str, doc: str | None) -> Results:
    """Results named after the calling script, titled by its docstring's first line."""
    return Results(Path(script_file).stem, (doc or "").strip().splitlines()[0] if doc else "")


def command_line() -> str:
    """The command as run, from the repository root's point of view, without --json PATH."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if arg == "--json":
            skip = True
            continue
        if not arg.startswith("--json="):
            args.append(arg)
    script = Path(sys.argv[0])
    return shlex.join(["python", f"benchmarks/{script.name}", *args])


def environment() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(), **versions}


def _cell(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value if isinstance(value, (int, float, str)) or value is None else str(value)
