"""The `deepinfer` command line: a thin dispatcher over subcommand modules.

Each subcommand lives in its own module exposing `add_arguments(parser)` and
`run(args) -> int`, and calls the same public functions a library user would.
A `UserError` becomes a one-paragraph message and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from deepinfer.errors import UserError

# subcommand name -> (module under deepinfer.cli, one-line help)
SUBCOMMANDS = {
    "generate": ("generate", "generate a chat reply (optionally constrained)"),
    "extract": ("extract", "extract one validated JSON object per input"),
    "compile": ("compile", "show what the constraint compiler makes of a constraint"),
    "serve": ("serve", "run the OpenAI/Anthropic-compatible HTTP server"),
    "bench": ("bench", "run the project's benchmarks"),
    "doctor": ("doctor", "show versions, threads, the model cache and which native kernels are built"),
}


def _available_subcommands():
    for name, (module, help_text) in SUBCOMMANDS.items():
        try:
            yield name, importlib.import_module(f"deepinfer.cli.{module}"), help_text
        except ModuleNotFoundError as exc:
            if exc.name != f"deepinfer.cli.{module}":
                raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deepinfer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module, help_text in _available_subcommands():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UserError as exc:
        print(f"deepinfer: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
