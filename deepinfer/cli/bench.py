"""`deepinfer bench NAME [ARGS...]`: run one of the project's benchmark scripts.

The scripts live in the repository's `benchmarks/` folder (they compare with
peers that are not dependencies of the package); this subcommand finds the
folder from a checkout or `DEEPINFER_BENCHMARKS_DIR` and runs the script with
the same Python, passing the remaining arguments through.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from deepinfer import envs
from deepinfer.errors import UserError

# name -> (script, what it measures)
BENCHMARKS = {
    "masks": ("maskbench.py", "JSON Schema masks on MaskBench-format cases"),
    "regex": ("regex_masks.py", "regex compile and mask times vs outlines-core"),
    "grammars": ("grammar_masks.py", "grammar masks vs xgrammar and llguidance"),
    "throughput": ("engine_throughput.py", "32 JSON extraction requests vs transformers + xgrammar"),
    "decode": ("engine_decode.py", "single-stream decode tokens/s vs transformers"),
    "prefix": ("engine_prefix_ttft.py", "time to first token, prefix-cache hit vs miss"),
    "kvtier": ("kv_tier.py", "time to first token after a restart, disk KV tier vs cold prefill"),
    "overhead": ("engine_constraint_overhead.py", "constrained vs unconstrained decode"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    lines = [f"  {name:<11} {help_text}" for name, (_, help_text) in BENCHMARKS.items()]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "benchmarks:\n" + "\n".join(lines) + "\n\nArguments after NAME go to the script (try NAME --help)."
    parser.add_argument("name", choices=sorted(BENCHMARKS), metavar="NAME", help="which benchmark")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")


def benchmarks_dir() -> Path:
    """The `benchmarks/` folder: from the environment, or beside the package in a checkout."""
    folder = envs.BENCHMARKS_DIR.path() or Path(__file__).resolve().parents[2] / "benchmarks"
    if not folder.is_dir():
        raise UserError(f"the benchmarks folder {folder} does not exist. The benchmark scripts ship with the "
                        "source repository, not the installed package: run from a checkout, or set "
                        "DEEPINFER_BENCHMARKS_DIR to its benchmarks/ folder.")
    return folder


def run(args: argparse.Namespace) -> int:
    script = benchmarks_dir() / BENCHMARKS[args.name][0]
    if not script.is_file():
        raise UserError(f"benchmark script {script} is missing from the benchmarks folder.")
    return subprocess.call([sys.executable, str(script), *args.script_args])
