"""Environment variables: one typed table (deepinfer/envs.py) and nothing else reads os.environ."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepinfer import envs

PACKAGE = Path(__file__).resolve().parent.parent / "deepinfer"


def test_only_envs_reads_the_environment():
    readers = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.name != "envs.py" or p.parent != PACKAGE
               if re.search(r"\bos\.environ\b|\bgetenv\b|\bputenv\b", p.read_text(encoding="utf-8"))]
    assert readers == []


def test_every_variable_the_package_names_is_in_the_table():
    named = {m for p in PACKAGE.rglob("*.py") for m in re.findall(r"\bDEEPINFER_[A-Z0-9_]+", p.read_text())}
    assert named <= {v.name for v in envs.VARIABLES}


def test_each_variable_has_a_distinct_name_and_a_meaning():
    names = [v.name for v in envs.VARIABLES]
    assert len(names) == len(set(names))
    assert all(v.meaning and "\n" not in v.meaning for v in envs.VARIABLES)
    table = envs.markdown_table()
    assert all(f"`{name}`" in table for name in names) and len(table.splitlines()) == len(names) + 2


def test_empty_counts_as_unset(monkeypatch):
    monkeypatch.setenv("DEEPINFER_MODEL_DIR", "")
    assert not envs.MODEL_DIR.is_set() and envs.MODEL_DIR.path() is None
    monkeypatch.setenv("DEEPINFER_MODEL_DIR", "~/models/x")
    assert envs.MODEL_DIR.path() == Path.home() / "models" / "x"


def test_cache_dir_order(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert envs.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("DEEPINFER_CACHE_DIR")
    assert envs.cache_dir() == tmp_path / "xdg" / "deepinfer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert envs.cache_dir() == tmp_path / "home" / ".cache" / "deepinfer"


@pytest.mark.parametrize("text, on", [("0", False), ("off", False), (" No ", False), ("FALSE", False),
                                      ("1", True), ("yes", True), ("", True)])
def test_flags(monkeypatch, text, on):
    monkeypatch.setenv("DEEPINFER_NATIVE", text)
    assert envs.NATIVE.enabled() is on


def test_integers_and_choices_refuse_bad_values_by_name(monkeypatch):
    monkeypatch.setenv("DEEPINFER_GC_YOUNG", "12x")
    with pytest.raises(ValueError, match="DEEPINFER_GC_YOUNG='12x'"):
        envs.GC_YOUNG.integer()
    monkeypatch.setenv("DEEPINFER_GC_YOUNG", " 123 ")
    assert envs.GC_YOUNG.integer() == 123
    monkeypatch.setenv("DEEPINFER_BF16_GEMM", " Native ")
    assert envs.BF16_GEMM.choice() == "native"
    monkeypatch.setenv("DEEPINFER_BF16_GEMM", "  ")
    assert envs.BF16_GEMM.choice() == "auto"
    monkeypatch.setenv("DEEPINFER_BF16_GEMM", "fp8")
    with pytest.raises(ValueError, match="DEEPINFER_BF16_GEMM='fp8': use one of auto, native, float32"):
        envs.BF16_GEMM.choice()


def test_the_young_threshold_default_is_the_collectors():
    from deepinfer.constraints.regular import gcpause
    assert int(envs.GC_YOUNG.default) == gcpause.YOUNG_THRESHOLD


def test_child_environment_keeps_the_parent_and_overrides(monkeypatch):
    monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    child = envs.child_environment(TMPDIR="/x")
    assert child["DEEPINFER_NATIVE"] == "0" and child["TMPDIR"] == "/x"
