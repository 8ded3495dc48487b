#!/usr/bin/env python3
"""Write the benchmark page (docs/benchmarks.md) and its plots from benchmark results.

    python benchmarks/report.py results/ [--maskbench-results mb/results_*.jsonl] \\
        [--out docs/benchmarks.md] [--img docs/img]

`results/` holds the files the benchmark scripts write with `--json PATH` (any *.json there);
`--maskbench-results` adds the MaskBench harness's per-engine JSONL files (engines side by side).
Each benchmark gets a section: the command that produced it, the machine it ran on, its tables,
a summary of its per-step time distributions and their plot, and for the throughput benchmark
tokens/s against the number of concurrent requests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from maskbench_results import harness_results  # noqa: E402
from report_plots import distribution_plot, throughput_plot  # noqa: E402
from result_json import FORMAT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["maskbench_harness", "maskbench", "maskbench_soundness", "regex_masks", "grammar_masks",
         "engine_throughput", "engine_decode", "engine_prefix_ttft", "kv_tier", "engine_constraint_overhead",
         "speculation"]
HEADINGS = {
    "maskbench_harness": "MaskBench: JSON Schema masks, engines side by side",
    "maskbench": "MaskBench cases, deepinfer alone",
    "maskbench_soundness": "Mask soundness fuzz on MaskBench cases",
    "regex_masks": "Regex masks: deepinfer and outlines-core",
    "grammar_masks": "Grammar masks: deepinfer, xgrammar and llguidance",
    "engine_throughput": "Engine throughput: concurrent JSON extraction requests",
    "engine_decode": "Single-stream decode",
    "engine_prefix_ttft": "Prefix cache: time to first token",
    "kv_tier": "KV tier: time to first token after a restart",
    "engine_constraint_overhead": "Cost of a constraint during decoding",
    "speculation": "Speculative decoding: off, fixed length 5, scheduled",
}
NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(e[-+]?\d+)?\s*(x|%|ms|us|s)?$")
DISTRIBUTION_COLUMNS = ["distribution", "steps", "mean", "p50", "p90", "p99", "p99.9", "max"]


def load_documents(folder: Path | None, harness_files: list[Path], harness_command: str | None) -> list[dict]:
    documents = []
    for path in sorted(folder.glob("*.json")) if folder else []:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT or "benchmark" not in document:
            raise SystemExit(f"{path}: not a benchmark result (written by a benchmark script's --json)")
        documents.append(document)
    if harness_files:
        documents.append(harness_results(harness_files))
        if harness_command:
            documents[-1]["command"] = harness_command
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(documents, key=lambda d: (rank.get(d["benchmark"], len(ORDER)), d["benchmark"]))


def markdown_table(columns: list[str], rows: list[list]) -> list[str]:
    numeric = [all(_is_number(row[i]) for row in rows if i < len(row) and row[i] not in ("", "-", None))
               for i in range(len(columns))]
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join("--:" if n else ":--" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    return lines


def distribution_rows(document: dict) -> list[list]:
    rows = []
    for dist in document.get("distributions") or []:
        at = dict((q, v) for q, v in dist["quantiles"])
        rows.append([dist["name"], f"{dist['count']:,}", _num(dist["mean"]),
                     *(_num(at.get(q)) for q in (50, 90, 99, 99.9, 100))])
    return rows


def environment_line(env: dict) -> str:
    machine = f"{env.get('cpus', '?')} CPUs ({env.get('processor', '?')}), {env.get('platform', '?')}"
    versions = ", ".join(f"{k} {v}" for k, v in env.items() if k not in ("cpus", "processor", "platform"))
    return f"Ran on {machine}; {versions}."


def section(document: dict, out_dir: Path, img_dir: Path) -> list[str]:
    name = document["benchmark"]
    lines = [f"## {HEADINGS.get(name, document.get('title') or name)}", ""]
    if document.get("title") and name in HEADINGS and document["title"] != HEADINGS[name]:
        lines += [document["title"], ""]
    lines += ["```bash", document["command"], "```", ""]
    if document.get("environment"):
        lines += [environment_line(document["environment"]), ""]
    for table in document.get("tables") or []:
        lines += [f"**{table['title']}**", "", *markdown_table(table["columns"], table["rows"]), ""]
    plots = [throughput_plot(document, img_dir / f"{name}_throughput.png"),
             distribution_plot(document, img_dir / f"{name}_step_times.png")]
    rows = distribution_rows(document)
    if rows:
        unit = document["distributions"][0]["unit"]
        lines += [f"**Per-step times ({unit})**", "", *markdown_table(DISTRIBUTION_COLUMNS, rows), ""]
    for plot in filter(None, plots):
        lines += [f"![{plot.stem.replace('_', ' ')}]({os.path.relpath(plot, out_dir).replace(os.sep, '/')})", ""]
    return lines


def report(documents: list[dict], out: Path, img_dir: Path, title: str = "Benchmarks") -> str:
    page = os.path.relpath(out, ROOT).replace(os.sep, "/") if out.is_absolute() else out.as_posix()
    lines = [f"# {title}", "",
             "This page is generated by `benchmarks/report.py` from the JSON results of the scripts in "
             "`benchmarks/`; edit those, not this file. To reproduce it, run each command below with "
             "`--json results/NAME.json` added, then `python benchmarks/report.py results/ --out "
             f"{page}` (add `--maskbench-results DIR/results_*.jsonl` for the MaskBench harness). "
             "Timings depend on the machine and its load: compare rows of one run with each other.", ""]
    headings = [HEADINGS.get(d["benchmark"], d.get("title") or d["benchmark"]) for d in documents]
    lines += [f"- [{h}](#{_anchor(h)})" for h in headings] + [""]
    for document in documents:
        lines += section(document, out.parent, img_dir)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="?", help="folder of benchmark result JSON files")
    ap.add_argument("--maskbench-results", type=Path, nargs="+", default=[],
                    help="MaskBench harness JSONL files (results_ENGINE.jsonl), one per engine")
    ap.add_argument("--maskbench-command", default=None, help="the harness command shown for those results")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--img", type=Path, default=None, help="folder for the plots (default: img/ beside --out)")
    ap.add_argument("--title", default="Benchmarks", help="the page's heading")
    args = ap.parse_args(argv)
    if args.results is None and not args.maskbench_results:
        ap.error("give a results folder, --maskbench-results, or both")
    if args.results is not None and not args.results.is_dir():
        ap.error(f"{args.results} is not a folder")
    documents = load_documents(args.results, args.maskbench_results, args.maskbench_command)
    if not documents:
        ap.error(f"no benchmark results in {args.results}")
    img_dir = args.img or args.out.parent / "img"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(documents, args.out, img_dir, args.title), encoding="utf-8")
    print(f"wrote {args.out} ({len(documents)} benchmarks) and its plots in {img_dir}")
    return 0


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) or bool(NUMBER.match(str(value).strip()))


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


if __name__ == "__main__":
    sys.exit(main())
