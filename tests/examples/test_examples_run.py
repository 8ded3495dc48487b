"""Every example runs as written (as `__main__`, via runpy) against a tiny random model.

In-process rather than a subprocess: importing torch again per example would
cost more than the examples themselves.
"""

from __future__ import annotations

import json
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture()
def run_example(monkeypatch, capsys):
    def run(name: str, *args: str, env: dict | None = None) -> Result:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "argv", [str(EXAMPLES / name), *args])
        code = 0
        try:
            runpy.run_path(str(EXAMPLES / name), run_name="__main__")
        except SystemExit as exc:
            code = exc.code or 0
        out, err = capsys.readouterr()
        return Result(code, out, err)
    return run


def test_pydantic_models(model_dir, run_example):
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


def test_extract_folder_with_schema_file(model_dir, tmp_path, run_example):
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
def test_extract_folder_default_schema(model_dir, tmp_path, run_example):
    out = tmp_path / "out.jsonl"
    r = run_example("extract_folder.py", str(_notes(tmp_path)), "--model", str(model_dir), "-o", str(out))
    assert r.returncode == 0, r.stderr
    import importlib.util
    spec = importlib.util.spec_from_file_location("extract_folder", EXAMPLES / "extract_folder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _check_records(out, module.DEFAULT_SCHEMA)


def test_sql_client_against_live_server(model_dir, run_example):
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
