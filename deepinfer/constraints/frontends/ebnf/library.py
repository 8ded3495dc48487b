"""The shipped grammar library (top-level `grammars/`, packaged as deepinfer/data/grammars).

Owns name resolution: `json` -> json.lark (or json.gbnf when GBNF syntax is
asked for, or when that is the only file), `json.gbnf` -> that file exactly.
Knows nothing about parsing; the EBNF front end parses what this returns.
"""

from __future__ import annotations

from pathlib import Path

from deepinfer.resources import library_dir

from ...errors import ConstraintError

EXTENSIONS = {".lark": "lark", ".gbnf": "gbnf"}


def available_grammars() -> dict[str, dict[str, Path]]:
    """name -> {syntax: path} for every shipped grammar file."""
    folder = library_dir("grammars")
    out: dict[str, dict[str, Path]] = {}
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            syntax = EXTENSIONS.get(path.suffix)
            if syntax and path.is_file():
                out.setdefault(path.stem, {})[syntax] = path
    return out


def load_library_grammar(name: str, syntax: str | None = "lark") -> tuple[str, str]:
    """(grammar text, its syntax) of a shipped grammar; ConstraintError lists the names."""
    library = available_grammars()
    stem, suffix = name, None
    for ext, ext_syntax in EXTENSIONS.items():
        if name.endswith(ext):
            stem, suffix = name[: -len(ext)], ext_syntax
    files = library.get(stem)
    if not files or (suffix and suffix not in files):
        names = ", ".join(f"{n} ({'/'.join(sorted(f))})" for n, f in library.items()) or "none"
        raise ConstraintError(f"no shipped grammar named {name!r}; available: {names}")
    chosen = suffix or (syntax if syntax in files else next(iter(sorted(files))))
    return files[chosen].read_text(encoding="utf-8"), chosen
