"""`deepinfer serve` as a user runs it: a subprocess on a free port, the real load path."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from deepinfer.server.background import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_serve_subcommand(tiny_model_dir):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "deepinfer", "serve", "--model", str(tiny_model_dir),
                             "--port", str(port), "--api-key", "sk-cli", "--served-model-name", "tiny-cli",
                             "--json-whitespace", "compact", "--reasoning-end", "</think>", "--compile-timeout", "30",
                             "--batch-invariant", "--no-speculative", "--no-jump-forward",
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
