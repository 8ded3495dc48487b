"""Every example runs as written (as a subprocess) against a tiny random model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def run_example(name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=300, env=full_env, cwd=ROOT)


def test_pydantic_models(model_dir):
    r = run_example("pydantic_models.py", env={"DEEPINFER_MODEL_DIR": str(model_dir)})
    assert r.returncode == 0, r.stderr
    contact, review = r.stdout.splitlines()
    assert contact.startswith("Contact: Contact(name=") and "role=" in contact, r.stdout
    assert review.startswith("Review: Review(product=") and "stars=" in review, r.stdout


def _notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Ann and Raj launched the new site. Everyone loved it.")
    (folder / "b.txt").write_text("The outage annoyed Lee.")
    return folder


def _check_records(out: Path, schema: dict) -> None:
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r.pop("file") for r in records] == ["a.txt", "b.txt"]
    for record in records:
        jsonschema.validate(record, schema)


def test_extract_folder_with_schema_file(model_dir, tmp_path):
    schema = {"type": "object", "properties": {"who": {"type": "string", "maxLength": 6},
                                               "mood": {"enum": ["good", "bad"]}},
              "required": ["who", "mood"], "additionalProperties": False}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    out = tmp_path / "out.jsonl"
    r = run_example("extract_folder.py", str(_notes(tmp_path)), "--schema", str(tmp_path / "s.json"),
                    "--model", str(model_dir), "--max-tokens", "40", "-o", str(out))
    assert r.returncode == 0, r.stderr
    _check_records(out, schema)


@pytest.mark.slow
def test_extract_folder_default_schema(model_dir, tmp_path):
    out = tmp_path / "out.jsonl"
    r = run_example("extract_folder.py", str(_notes(tmp_path)), "--model", str(model_dir), "-o", str(out))
    assert r.returncode == 0, r.stderr
    import importlib.util
    spec = importlib.util.spec_from_file_location("extract_folder", EXAMPLES / "extract_folder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _check_records(out, module.DEFAULT_SCHEMA)


def test_sql_client_against_live_server(model_dir):
    from deepinfer.engine import AsyncEngine
    from deepinfer.server.app import create_app
    from deepinfer.server.background import BackgroundServer
    from deepinfer.server.backend import build_state
    from deepinfer.server.config import ServerConfig

    engine = AsyncEngine(str(model_dir), kv_cache_bytes=32 << 20)
    state = build_state(engine, engine.tokenizer, engine.compiler, ServerConfig(model_name="tiny"))
    try:
        with BackgroundServer(create_app(state)) as server:
            r = run_example("sql_client.py", "Which customers spent the most?", "--base-url",
                            server.url + "/v1", "--max-tokens", "60")
    finally:
        engine.shutdown()
    assert r.returncode == 0, r.stderr
    query = r.stdout.splitlines()[0]
    assert query.startswith("SELECT ") and " FROM " in query or "unfinished" in r.stdout
    if "unfinished" not in r.stdout:
        assert query.endswith(";")
