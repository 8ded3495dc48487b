"""The kernel table (native/kernels.py): every csrc kernel declared with its real sources, twin
and caller; loading goes through it; its status says built or why it falls back."""

from __future__ import annotations

import ctypes
import importlib
import re
import shutil

import pytest

from deepinfer.native import KERNELS, build, kernels, load_library, status, statuses

CSRC = build.SOURCES


def includes(name: str) -> set[str]:
    """The csrc headers a source includes, directly or through other headers."""
    found, todo = set(), [name]
    while todo:
        text = (CSRC / todo.pop()).read_text()
        for header in re.findall(r'#include "([^"]+)"', text):
            if header not in found:
                found.add(header)
                todo.append(header)
    return found


def test_every_c_source_is_declared_with_the_headers_it_includes():
    assert sorted(p.stem for p in CSRC.glob("*.c")) == sorted(KERNELS)
    for kernel in KERNELS.values():
        assert set(kernel.headers) == includes(f"{kernel.name}.c"), kernel.name
        assert all((CSRC / source).is_file() for source in kernel.sources)


def resolve(dotted: str):
    module, _, attribute = dotted.partition(":")
    target = importlib.import_module(module)
    return getattr(target, attribute) if attribute else target


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_kernel_names_a_real_twin_and_the_caller_that_loads_it(name):
    kernel = KERNELS[name]
    resolve(kernel.twin)
    caller = resolve(kernel.caller)
    assert f'"{name}"' in open(caller.__file__).read()     # the caller loads it by this name


def test_an_undeclared_kernel_or_a_wrong_threading_flag_is_refused():
    with pytest.raises(ValueError, match="no native kernel 'nope'"):
        load_library("nope")
    with pytest.raises(ValueError, match="openmp=False"):
        load_library("mask_bits", openmp=True)


def test_disabled_kernels_fall_back_and_say_why(monkeypatch):
    monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    assert load_library("mask_bits", openmp=False) is None
    found = statuses()
    assert all(s.state == "fallback" and "DEEPINFER_NATIVE=0" in s.reason for s in found)


def test_no_compiler_is_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(build, "_loaded", {})
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    found = status("mask_bits", probe=True)
    assert found.state == "fallback" and "no C compiler" in found.reason and not found.built


def test_a_failed_build_is_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(build, "_loaded", {})
    found = status("mask_bits", probe=True)
    assert found.state == "fallback" and "could not build" in found.reason


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_a_probe_keeps_no_handle_so_the_first_caller_sets_its_signatures(monkeypatch):
    monkeypatch.setattr(build, "_loaded", {})
    assert status("mask_bits").state == "not loaded"
    probed = status("mask_bits", probe=True)
    assert probed.built and probed.library.is_file()
    assert status("mask_bits").state == "not loaded"        # probing loaded nothing for callers
    sig = ([ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64], ctypes.c_int64)
    lib = load_library("mask_bits", {"or_ids32": sig})
    assert lib.or_ids32.restype is ctypes.c_int64
    assert status("mask_bits") == kernels.KernelStatus(KERNELS["mask_bits"], "built", library=probed.library)
