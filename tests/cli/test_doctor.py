"""`deepinfer doctor`: versions, threads, the model cache and every native kernel's state."""

from __future__ import annotations

import re

import torch

import deepinfer
from deepinfer.cli import main
from deepinfer.native import KERNELS, build


def doctor(capsys, *args):
    assert main(["doctor", *args]) == 0
    return capsys.readouterr().out


def kernel_lines(out: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\w+)\s+(built|fallback|not loaded)", out, re.M)}


def test_reports_versions_threads_cache_and_every_kernel(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("DEEPINFER_CACHE_DIR", raising=False)
    monkeypatch.setattr(build, "_loaded", {})
    monkeypatch.setattr(build.shutil, "which", lambda name: None)   # a machine without a compiler
    monkeypatch.delenv("CC", raising=False)
    out = doctor(capsys)
    assert f"deepinfer {deepinfer.__version__}" in out
    assert f"torch {torch.__version__}: {torch.get_num_threads()} threads" in out
    assert f"model cache: {tmp_path / 'deepinfer'}" in out and "not downloaded yet" in out
    assert kernel_lines(out) == {name: "fallback" for name in KERNELS}
    assert out.count("no C compiler found") == len(KERNELS)
    assert all(f"falls back to {k.twin}" in out for k in KERNELS.values())


def test_disabled_kernels_and_set_variables_are_shown(capsys, monkeypatch):
    monkeypatch.setenv("DEEPINFER_NATIVE", "off")
    out = doctor(capsys, "--no-build")
    assert kernel_lines(out) == {name: "fallback" for name in KERNELS}
    assert "disabled by DEEPINFER_NATIVE=off" in out and "DEEPINFER_NATIVE=off" in out.splitlines()[-1]


def test_no_build_reports_what_this_process_loaded(capsys, monkeypatch):
    monkeypatch.setattr(build, "_loaded", {})
    assert set(kernel_lines(doctor(capsys, "--no-build")).values()) == {"not loaded"}
