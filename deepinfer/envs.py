"""Every environment variable deepinfer reads (or sets), in one typed table.

Each `Variable` has a name, the value an unset variable stands for, a one-line meaning and a
type (its class: text, path, flag, integer or a choice of words), and reads the environment
when asked (never at import, so a test or an application may set a variable at any time).
`VARIABLES` lists them all; `markdown_table()` renders them for the README. Nothing else in
the package touches `os.environ`. Knows nothing about what the variables steer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

OFF_WORDS = ("0", "off", "false", "no")


@dataclass(frozen=True)
class Variable:
    """A text variable; an empty value counts as unset."""

    name: str
    default: str        # what an unset variable stands for ("" = nothing)
    meaning: str

    kind = "text"

    def is_set(self) -> bool:
        return bool(os.environ.get(self.name))

    def text(self) -> str:
        return os.environ.get(self.name) or self.default


@dataclass(frozen=True)
class PathVariable(Variable):
    kind = "path"

    def path(self) -> Path | None:
        """The path, `~` expanded; None when unset and without a default."""
        text = self.text()
        return Path(text).expanduser() if text else None


@dataclass(frozen=True)
class Flag(Variable):
    kind = "flag"

    def enabled(self) -> bool:
        """Anything but 0 / off / false / no (any case) is on."""
        return self.text().strip().lower() not in OFF_WORDS


@dataclass(frozen=True)
class Integer(Variable):
    kind = "integer"

    def integer(self) -> int:
        """The value as an int; ValueError naming the variable when it is not one."""
        text = self.text().strip()
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{self.name}={text!r} is not an integer") from None


@dataclass(frozen=True)
class Choice(Variable):
    choices: tuple[str, ...] = ()

    kind = "choice"

    def choice(self) -> str:
        """One of `choices` (case and surrounding blanks ignored); ValueError otherwise."""
        word = self.text().strip().lower() or self.default
        if word not in self.choices:
            raise ValueError(f"{self.name}={word!r}: use one of {', '.join(self.choices)}")
        return word


MODEL_DIR = PathVariable(
    "DEEPINFER_MODEL_DIR", "",
    "model directory or .gguf file to use when no model is given (instead of the default model)")
CACHE_DIR = PathVariable(
    "DEEPINFER_CACHE_DIR", "",
    "where the default model and compiled native kernels are kept (unset: $XDG_CACHE_HOME/deepinfer)")
XDG_CACHE_HOME = PathVariable(
    "XDG_CACHE_HOME", "~/.cache",
    "the user cache folder deepinfer's cache lives under when DEEPINFER_CACHE_DIR is unset")
NATIVE = Flag(
    "DEEPINFER_NATIVE", "1",
    "0 / off: never build or load the C kernels; each runs its Python twin (same results, slower)")
CC = Variable(
    "CC", "",
    "the C compiler that builds the native kernels (unset: cc, else gcc, on the PATH)")
BF16_GEMM = Choice(
    "DEEPINFER_BF16_GEMM", "auto",
    "bfloat16 weights: auto (float32 GEMMs on a CPU without AMX), native (bfloat16 GEMMs) or float32",
    choices=("auto", "native", "float32"))
GC_YOUNG = Integer(
    "DEEPINFER_GC_YOUNG", "50000",
    "young-generation threshold of Python's collector, raised once for constraint compiles (0: keep 700)")
GC_FREEZE = Flag(
    "DEEPINFER_GC_FREEZE", "1",
    "0: do not gc.freeze what survives a constraint compile (later collections then scan it again)")
BENCHMARKS_DIR = PathVariable(
    "DEEPINFER_BENCHMARKS_DIR", "",
    "the benchmarks/ folder `deepinfer bench` runs from (unset: the one beside the package in a checkout)")
API_KEY = Variable(
    "DEEPINFER_API_KEY", "",
    "`deepinfer serve` requires this key on every route but /health when --api-key is not given")
OMP_WAIT_POLICY = Variable(
    "OMP_WAIT_POLICY", "PASSIVE",
    "set to PASSIVE when unset (before torch loads): spinning OpenMP threads stall a shared CPU ~10x")

VARIABLES: tuple[Variable, ...] = (MODEL_DIR, CACHE_DIR, XDG_CACHE_HOME, NATIVE, CC, BF16_GEMM, GC_YOUNG,
                                   GC_FREEZE, BENCHMARKS_DIR, API_KEY, OMP_WAIT_POLICY)


def cache_dir() -> Path:
    """The user cache: $DEEPINFER_CACHE_DIR, else $XDG_CACHE_HOME/deepinfer, else ~/.cache/deepinfer."""
    return CACHE_DIR.path() or XDG_CACHE_HOME.path() / "deepinfer"


def default_omp_wait_policy() -> None:
    """OpenMP threads that spin while waiting made torch ~10x slower on a shared or oversubscribed
    CPU (measured on 2 cores at load 7): wait passively unless the user chose otherwise. Only
    effective before torch is imported."""
    os.environ.setdefault(OMP_WAIT_POLICY.name, OMP_WAIT_POLICY.default)


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment with `overrides`, for a subprocess (pip, a compiler)."""
    return {**os.environ, **overrides}


def markdown_table() -> str:
    """The variables as a Markdown table: name, type, default, meaning."""
    rows = ["| variable | type | default | meaning |", "| --- | --- | --- | --- |"]
    rows += [f"| `{v.name}` | {v.kind} | {f'`{v.default}`' if v.default else '(unset)'} | {v.meaning} |"
             for v in VARIABLES]
    return "\n".join(rows)
