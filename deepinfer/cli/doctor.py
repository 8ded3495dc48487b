"""`deepinfer doctor`: what this installation runs on, for a bug report or a slow first run.

Prints deepinfer's and Python's versions, torch's version and threads, where the model cache
is (and whether the default model is in it), each native kernel's state (built and loaded, or
falling back to its Python twin, and why; a kernel not built yet is built now, as first use
would) and the deepinfer environment variables that are set. Exit status 0 whatever it finds:
every fallback still runs, only slower.
"""

from __future__ import annotations

import argparse
import platform
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-build", action="store_true",
                        help="report only kernels already loaded; build none (faster on a fresh cache)")


def run(args: argparse.Namespace) -> int:
    import torch

    import deepinfer
    from deepinfer import envs
    from deepinfer.model import hub
    from deepinfer.native import statuses

    out = sys.stdout
    out.write(f"deepinfer {deepinfer.__version__} (python {platform.python_version()}, {platform.machine()})\n")
    out.write(f"torch {torch.__version__}: {torch.get_num_threads()} threads, "
              f"{torch.get_num_interop_threads()} inter-op threads\n")
    ready = "converted" if hub.default_model_ready() else "not downloaded yet"
    out.write(f"model cache: {envs.cache_dir()} (default model {hub.DEFAULT_MODEL_NAME}: {ready})\n")
    if envs.MODEL_DIR.is_set():
        out.write(f"model: {envs.MODEL_DIR.text()} (from {envs.MODEL_DIR.name})\n")
    out.write("native kernels:\n")
    for found in statuses(probe=not args.no_build):
        detail = str(found.library) if found.built else found.reason or "not built in this process"
        out.write(f"  {found.kernel.name:<13} {found.state:<10} {detail}\n")
        if not found.built:
            out.write(f"  {'':<13} {'':<10} falls back to {found.kernel.twin}\n")
    chosen = [v for v in envs.VARIABLES if v.is_set()]
    out.write("environment: " + (", ".join(f"{v.name}={v.text()}" for v in chosen) if chosen else "no variables set")
              + "\n")
    return 0
