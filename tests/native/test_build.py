"""Building, caching and loading the native kernels: never an error, at worst the PyTorch path."""

import ctypes
import logging
import shutil

import pytest

from deepinfer.native import build

needs_compiler = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A private cache, source folder and memo of loaded libraries."""
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "SOURCES", tmp_path / "csrc")
    monkeypatch.setattr(build, "_loaded", {})
    (tmp_path / "csrc").mkdir()
    return tmp_path


@needs_compiler
def test_builds_once_and_reuses_the_cached_library(sandbox, monkeypatch):
    (sandbox / "csrc" / "twice.c").write_text("float twice(float x) { return 2 * x; }\n")
    lib = build.load_library("twice", {"twice": ([ctypes.c_float], ctypes.c_float)})
    assert lib.twice(21.5) == 43.0                                 # the signature was applied
    built = list((sandbox / "cache" / "native").glob("twice-*.so"))
    assert len(built) == 1
    monkeypatch.setattr(build, "_loaded", {})
    monkeypatch.setattr(build, "_compile", lambda *a: pytest.fail("recompiled an unchanged source"))
    assert build.load_library("twice") is not None


@needs_compiler
def test_a_changed_source_builds_a_new_library(sandbox, monkeypatch):
    source = sandbox / "csrc" / "k.c"
    source.write_text("int k(void) { return 1; }\n")
    assert build.load_library("k") is not None
    source.write_text("int k(void) { return 2; }\n")
    monkeypatch.setattr(build, "_loaded", {})
    lib = build.load_library("k")
    assert lib.k() == 2
    assert len(list((sandbox / "cache" / "native").glob("k-*.so"))) == 2


@needs_compiler
def test_a_changed_header_builds_anew(sandbox, monkeypatch):
    (sandbox / "csrc" / "value.h").write_text("#define VALUE 1\n")
    (sandbox / "csrc" / "h.c").write_text('#include "value.h"\nint h(void) { return VALUE; }\n')
    assert build.load_library("h").h() == 1
    (sandbox / "csrc" / "value.h").write_text("#define VALUE 2\n")
    monkeypatch.setattr(build, "_loaded", {})
    assert build.load_library("h").h() == 2


@needs_compiler
def test_a_source_that_does_not_compile_gives_none_and_a_warning(sandbox, caplog):
    (sandbox / "csrc" / "broken.c").write_text("int broken( { return; }\n")
    with caplog.at_level(logging.WARNING, logger="deepinfer.native.build"):
        assert build.load_library("broken") is None
    assert "broken" in caplog.text
    assert not list((sandbox / "cache" / "native").glob("*.so"))  # no half-written library left


def test_disabled_by_environment(sandbox, monkeypatch):
    (sandbox / "csrc" / "off.c").write_text("int off(void) { return 0; }\n")
    monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    assert build.load_library("off") is None


def test_no_compiler_gives_none(sandbox, monkeypatch):
    (sandbox / "csrc" / "nocc.c").write_text("int nocc(void) { return 0; }\n")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    assert build.load_library("nocc") is None


@needs_compiler
def test_serial_kernels_build_without_openmp_or_torch(sandbox, monkeypatch):
    """openmp=False (the constraint compiler's kernels): no -fopenmp, and PyTorch is not imported."""
    import builtins

    (sandbox / "csrc" / "serial.c").write_text(
        "int serial(void) {\n#ifdef _OPENMP\n return 1;\n#else\n return 0;\n#endif\n}\n")
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise AssertionError("imported torch for a serial kernel")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert build.load_library("serial", openmp=False).serial() == 0
    monkeypatch.setattr(builtins, "__import__", real_import)
    monkeypatch.setattr(build, "_loaded", {})
    assert build.load_library("serial").serial() == 1        # the default keeps OpenMP
