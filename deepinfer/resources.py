"""Where the shipped data libraries live (`grammars/`, `constraints/`); the user cache is `envs.cache_dir`.

Both folders stand at the repository's top level and ship inside the wheel as
`deepinfer/data/<name>` (symbolic links in a checkout, real folders once built).
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


def library_dir(name: str) -> Path:
    """The folder of a shipped library: "grammars" or "constraints"."""
    if name not in ("grammars", "constraints"):
        raise ValueError(f"unknown data library {name!r}")
    return DATA_DIR / name


def library_entries(name: str) -> dict[str, Path]:
    """Map entry name (file stem) -> path, for every file of a shipped library."""
    folder = library_dir(name)
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")}

