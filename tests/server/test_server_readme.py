"""The README's and docs/server.md's examples stay true: their code blocks run against a tiny model
and a live server (the same commands a user runs against the default model)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from server_helpers import LiveServer, engine_state

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = "http://127.0.0.1:8000"


def code_blocks(page: str) -> list[tuple[str, str]]:
    text = (ROOT / page).read_text(encoding="utf-8")
    return re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)


README = code_blocks("README.md")
SERVER_PAGE = code_blocks("docs/server.md")


def block(blocks, lang: str, containing: str) -> str:
    (code,) = [code for kind, code in blocks if kind == lang and containing in code]
    return code


def cli_lines() -> list[str]:
    return [line for kind, code in README if kind == "bash" for line in code.splitlines()
            if line.startswith("deepinfer ")]


@pytest.fixture(scope="module")
def readme_server(tiny_engine):
    # `serve --json-whitespace compact`: greedy decoding of a random model otherwise spends its 100
    # tokens on the (bounded) whitespace the default mode allows between JSON tokens
    with LiveServer(engine_state(tiny_engine, api_key="sk-local", json_whitespace="compact")) as live:
        yield live


def run_python(code: str, env: dict) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def run_curl(code: str, server) -> dict:
    r = subprocess.run(["bash", "-c", code.replace(DEFAULT_URL, server.url)], capture_output=True, text=True,
                       timeout=120)
    return json.loads(r.stdout)


def test_quickstart_block(tiny_model_dir):
    out = run_python(block(README, "python", "model_validate_json"), {"DEEPINFER_MODEL_DIR": str(tiny_model_dir)})
    assert out.startswith("name=") and "population=" in out


def test_library_tour_block(tiny_model_dir):
    out = run_python(block(README, "python", "def ask("), {"DEEPINFER_MODEL_DIR": str(tiny_model_dir)})
    date, yes_no, total, *_ = out.splitlines()
    assert re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])-[0-3]\d", date)
    assert yes_no in ("yes", "no")
    assert re.fullmatch(r"[0-9]{1,3} \+ [0-9]{1,3} \+ [0-9]{1,3}", total)


def test_cli_blocks_parse():
    from deepinfer.cli import build_parser
    lines = cli_lines()
    assert len(lines) >= 6
    for line in lines:
        words = shlex.split(line.split(" #")[0].split(" > ")[0])
        args = build_parser().parse_args(words[1:])
        assert callable(args.run)


def test_chat_completions_curl_block(readme_server):
    body = run_curl(block(README, "bash", "/v1/chat/completions"), readme_server)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop", body  # greedy on the tiny model: finishes well in 100 tokens
    answer = json.loads(choice["message"]["content"])
    assert answer["answer"] in ("yes", "no") and len(answer["why"]) <= 60


def test_messages_curl_block(readme_server):
    body = run_curl(block(README, "bash", "/v1/messages"), readme_server)
    assert body["stop_reason"] == "end_turn", body
    answer = json.loads(body["content"][0]["text"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", answer["date"])


def test_responses_sdk_block(readme_server):
    out = run_python(block(README, "python", "responses.parse").replace(DEFAULT_URL, readme_server.url), {})
    assert out.startswith("answer=") and "why=" in out


def test_server_page_tool_call_block(readme_server):
    code = block(SERVER_PAGE, "python", "get_weather").replace(DEFAULT_URL, readme_server.url)
    out = run_python(code, {})
    assert "name='get_weather'" in out and '"city"' in out


@pytest.mark.slow
def test_cli_blocks_run(tiny_model_dir, tmp_path):
    """Every `deepinfer` line of the README runs as written (tiny model; the files it names exist),
    but for the server and the benchmarks."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "ann.txt").write_text("Ann Lee, 34, ann@example.com")
    env = {**os.environ, "DEEPINFER_MODEL_DIR": str(tiny_model_dir), "PYTHONPATH": str(ROOT)}
    lines = [line for line in cli_lines() if line.split()[1] not in ("serve", "bench")]
    for line in lines:
        command = line.split(" #")[0]
        r = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                           env=env)
        # extract exits 1 when a random model's output is cut off at max_tokens (reported on stderr)
        allowed = (0, 1) if command.startswith("deepinfer extract") else (0,)
        assert r.returncode in allowed and "Traceback" not in r.stderr, (command, r.stderr)
