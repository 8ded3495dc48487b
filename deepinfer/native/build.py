"""Compile a C source of `csrc/` into a shared library once per machine, cache it, load it.

The library is built with `-O3 -march=native -fopenmp` (the OpenMP runtime is the one PyTorch
already loaded, so kernels share its thread pool instead of starting a second one) into
<cache>/native/<name>-<hash>.so, the hash covering the source and csrc/'s headers, the flags, the compiler and the
CPU's feature flags, so a changed source or another machine builds anew. Built into a temporary
file and renamed, so concurrent processes never load a half-written library.

`load_library` returns None (and logs why, once) when building is impossible or disabled with
DEEPINFER_NATIVE=0; callers then take their Python path. Why each library was or was not
loaded is kept (`outcome`) for `kernels.status` and `deepinfer doctor`; `probe` builds and loads
a library for that report only. Any source of csrc/ builds here; kernels.py declares which
ones the package has.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import envs

log = logging.getLogger(__name__)

SOURCES = Path(__file__).resolve().parent / "csrc"
FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c11"]
SERIAL_FLAGS = [f for f in FLAGS if f != "-fopenmp"]  # kernels with no threads (and no torch)



@dataclass(frozen=True)
class Outcome:
    """What loading one library came to: the shared library, or why there is none."""

    library: Path | None
    reason: str = ""    # why the caller takes its Python path ("" when loaded)


_loaded: dict[str, ctypes.CDLL | None] = {}
_outcomes: dict[str, Outcome] = {}
_lock = threading.Lock()


def enabled() -> bool:
    return envs.NATIVE.enabled()


def disabled_reason() -> str:
    return f"disabled by {envs.NATIVE.name}={envs.NATIVE.text()}"


def load_library(name: str, signatures: dict[str, tuple[list, object]] | None = None,
                 openmp: bool = True) -> ctypes.CDLL | None:
    """The compiled `csrc/<name>.c`, or None when it cannot be built here (or is disabled).

    signatures: function name -> (argtypes, restype), set once when the library is first loaded.
    openmp=False builds without OpenMP and without importing PyTorch (the constraint compiler's
    kernels: single-threaded, and that package never needs torch)."""
    if not enabled():
        return None
    with _lock:
        if name not in _loaded:
            lib, _outcomes[name] = _build_and_load(name, FLAGS if openmp else SERIAL_FLAGS)
            if lib is not None:
                for function, (argtypes, restype) in (signatures or {}).items():
                    getattr(lib, function).argtypes, getattr(lib, function).restype = argtypes, restype
            _loaded[name] = lib
        return _loaded[name]


def outcome(name: str) -> Outcome | None:
    """Why `name` is or is not loaded in this process; None when nothing asked for it yet."""
    if not enabled():
        return Outcome(None, disabled_reason())
    with _lock:
        return _outcomes.get(name) if name in _loaded else None


def probe(name: str, openmp: bool = True) -> Outcome:
    """`outcome`, building and loading the library first if nothing did (the handle is not kept:
    signatures are set by the first real caller)."""
    found = outcome(name)
    if found is not None:
        return found
    return _build_and_load(name, FLAGS if openmp else SERIAL_FLAGS)[1]


def _build_and_load(name: str, flags: list[str]) -> tuple[ctypes.CDLL | None, Outcome]:
    if "-fopenmp" in flags:
        import torch  # noqa: F401  (loads PyTorch's OpenMP runtime first, so the library binds to it)

    compiler = envs.CC.text() or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        log.info("no C compiler found: %s runs on its Python path", name)
        return None, Outcome(None, f"no C compiler found ({envs.CC.name} unset, no cc or gcc on the PATH)")
    # The headers of csrc/ are part of every library's source (shared helpers such as fast_exp.h).
    source = b"".join(p.read_bytes() for p in [SOURCES / f"{name}.c", *sorted(SOURCES.glob("*.h"))])
    target = envs.cache_dir() / "native" / f"{name}-{_fingerprint(source, compiler, flags)}.so"
    try:
        if not target.exists():
            _compile(compiler, SOURCES / f"{name}.c", target, flags)
        return ctypes.CDLL(str(target)), Outcome(target)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not build the native kernel %s (%s): using its Python path", name, exc)
        return None, Outcome(None, f"could not build with {compiler}: {_first_line(str(exc))}")


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "unknown error"


def _fingerprint(source: bytes, compiler: str, flags: list[str]) -> str:
    digest = hashlib.sha256(source)
    digest.update(" ".join(flags).encode())
    digest.update(_compiler_version(compiler).encode())
    digest.update(platform.machine().encode())
    digest.update(_cpu_flags().encode())
    return digest.hexdigest()[:16]


def _compiler_version(compiler: str) -> str:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return compiler


def _cpu_flags() -> str:
    """The CPU's feature flags (-march=native code must not run on a machine that lacks them)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def _compile(compiler: str, source: Path, target: Path, flags: list[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        result = subprocess.run([compiler, *flags, "-o", tmp, str(source), "-lm"], capture_output=True,
                                text=True, timeout=300)
        if result.returncode != 0:
            raise subprocess.SubprocessError(result.stderr.strip()[-2000:] or f"exit status {result.returncode}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
