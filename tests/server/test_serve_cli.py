"""`deepinfer serve` as a user runs it: a subprocess on a free port, the real load path; and its
flags as the server's config receives them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from deepinfer.cli import build_parser
from deepinfer.server.background import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_serve_subcommand(tiny_model_dir):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "deepinfer", "serve", "--model", str(tiny_model_dir),
                             "--port", str(port), "--api-key", "sk-cli", "--served-model-name", "tiny-cli",
                             "--json-whitespace", "compact", "--reasoning-end", "</think>", "--compile-timeout", "30",
                             "--compile-memory", "1024", "--batch-invariant", "--no-speculative", "--no-jump-forward",
                             "--log-level", "warning"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.time() < deadline, "server did not come up"
            time.sleep(0.2)
        assert httpx.get(url + "/v1/models").status_code == 401
        models = httpx.get(url + "/v1/models", headers={"Authorization": "Bearer sk-cli"}).json()
        assert models["data"][0]["id"] == "tiny-cli"
        r = httpx.post(url + "/v1/chat/completions", headers={"Authorization": "Bearer sk-cli"}, timeout=60,
                       json={"model": "tiny-cli", "max_tokens": 40, "seed": 1,
                             "messages": [{"role": "user", "content": "hi"}],
                             "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {
                                 "type": "object", "properties": {"n": {"type": "integer", "maximum": 9, "minimum": 0}},
                                 "required": ["n"], "additionalProperties": False}}}})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] in [f'{{"n":{i}}}' for i in range(10)]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("flags, limit", [([], 2048 << 20), (["--compile-memory", "64"], 64 << 20),
                                          (["--compile-memory", "0"], None)])
def test_compile_memory_flag_is_the_servers_byte_limit(monkeypatch, flags, limit):
    """--compile-memory MB (MiB; 0: none) becomes ServerConfig.compile_memory_bytes."""
    import deepinfer.server.serve as serve_module
    from deepinfer.server.config import ServerConfig

    seen = {}
    monkeypatch.setattr(serve_module, "serve", lambda model, **options: seen.update(options))
    args = build_parser().parse_args(["serve", *flags])
    assert args.run(args) == 0
    assert seen["compile_memory_bytes"] == limit
    assert ServerConfig(model_name="m").compile_memory_bytes == 2048 << 20


def test_compile_memory_flag_refuses_a_negative_size(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--compile-memory", "-1"])
    assert "0 turns the limit off" in capsys.readouterr().err
