"""Resolve `--schema` / `--regex` / `--grammar FILE_OR_NAME` into constraint text.

Shared by the `compile` and `extract` subcommands (and `generate`'s
constraint flags). A value that is an existing file is read; otherwise it is
looked up by name in the shipped libraries (`constraints/` for schemas and
regexes, `grammars/` for grammars). A regex that names no library entry is the
pattern itself. Errors are `UserError`s naming the file, line or known names.
"""

from __future__ import annotations

import json
from pathlib import Path

from deepinfer.errors import UserError
from deepinfer.resources import library_dir

REGEX_SUFFIXES = (".regex", ".re", ".txt")
GRAMMAR_SUFFIXES = {".lark": "lark", ".gbnf": "gbnf", ".ebnf": "gbnf"}


def _library(kind_suffixes: tuple[str, ...]) -> dict[str, Path]:
    """Shipped constraints by name (file stem), from constraints/ and its subfolders (json/, regex/)."""
    folder = library_dir("constraints")
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.rglob("*"))
            if path.is_file() and path.suffix in kind_suffixes and not path.name.startswith(".")}


def load_schema(value: str) -> tuple[dict, str]:
    """(schema, where it came from) for a JSON Schema file path or a shipped schema name."""
    path = Path(value)
    if not path.is_file():
        named = _library((".json",))
        if value not in named:
            names = ", ".join(sorted(named)) or "none shipped yet"
            raise UserError(f"--schema {value!r} is neither a file nor a shipped schema name "
                            f"(available: {names})")
        path = named[value]
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(schema, (dict, bool)):
        raise UserError(f"{path}: a JSON Schema must be an object, not {type(schema).__name__}")
    return schema, str(path)


def load_regex(value: str) -> tuple[str, str]:
    """(pattern, where it came from): a shipped regex name, a file, or the pattern itself."""
    named = _library(REGEX_SUFFIXES)
    if value in named:
        return named[value].read_text(encoding="utf-8").strip(), str(named[value])
    path = Path(value)
    if path.suffix in REGEX_SUFFIXES and path.is_file():
        return path.read_text(encoding="utf-8").strip(), str(path)
    return value, "--regex"


def load_grammar(value: str, syntax: str | None) -> tuple[str, str, str]:
    """(grammar text, syntax, where it came from) for a grammar file or a shipped grammar name."""
    path = Path(value)
    if path.is_file():
        chosen = syntax or GRAMMAR_SUFFIXES.get(path.suffix) or "lark"
        return path.read_text(encoding="utf-8"), chosen, str(path)
    from deepinfer.constraints.frontends.ebnf.library import load_library_grammar
    text, chosen = load_library_grammar(value, syntax or "lark")
    return text, chosen, f"grammars/{value}"


def add_constraint_arguments(parser, required: bool) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--schema", metavar="FILE_OR_NAME",
                       help="a JSON Schema file, or a shipped schema name (e.g. invoice)")
    group.add_argument("--regex", metavar="PATTERN_OR_NAME",
                       help="a regular expression, or a shipped regex name (e.g. email)")
    group.add_argument("--grammar", metavar="FILE_OR_NAME",
                       help="a lark/GBNF grammar file, or a shipped grammar name (e.g. sql)")
    parser.add_argument("--syntax", choices=("lark", "gbnf"), default=None,
                        help="grammar syntax (default: from the file suffix, else lark)")


def constraint_from_args(args) -> dict:
    """SamplingParams keyword arguments for the constraint the arguments ask for ({} if none)."""
    if getattr(args, "schema", None):
        return {"json_schema": load_schema(args.schema)[0]}
    if getattr(args, "regex", None):
        return {"regex": load_regex(args.regex)[0]}
    if getattr(args, "grammar", None):
        text, syntax, _ = load_grammar(args.grammar, args.syntax)
        return {"grammar": text, "grammar_syntax": syntax}
    return {}
