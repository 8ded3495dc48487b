"""Safe by default: without an API key only loopback names and JSON bodies are served (raw HTTP)."""

from __future__ import annotations

import argparse
import types

import httpx
import pytest

from server_helpers import LiveServer, engine_state

from deepinfer.cli import serve as serve_cli
from deepinfer.server import serve as serve_module
from deepinfer.server.guard import host_name, is_json_type

CHAT = {"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:9", "LOCALHOST"])
def test_loopback_hosts_are_served(server, host):
    r = httpx.post(server.url + "/v1/chat/completions", json=CHAT, headers={"host": host}, timeout=30)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", "192.168.1.5"])
def test_other_hosts_are_refused_without_a_key(server, host):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1."""
    for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/health")):
        r = httpx.request(method, server.url + path, json=CHAT if method == "POST" else None,
                          headers={"host": host}, timeout=30)
        assert r.status_code == 403, (path, r.text)
        assert r.json()["error"]["code"] == "host_not_allowed" and "--allowed-hosts" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/messages", json=CHAT, headers={"host": host}, timeout=30)
    assert r.status_code == 403 and r.json()["type"] == "error"  # Anthropic's shape


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_bodies_a_page_can_send_without_preflight_are_refused(server, content_type):
    headers = {} if content_type is None else {"content-type": content_type}
    r = httpx.post(server.url + "/v1/chat/completions", content=httpx.Request(
        "POST", "http://x", json=CHAT).content, headers=headers, timeout=30)
    assert r.status_code == 415, r.text
    assert "application/json" in r.json()["error"]["message"]


def test_json_media_types_are_accepted():
    assert is_json_type("application/json") and is_json_type("Application/JSON; charset=utf-8")
    assert is_json_type("application/vnd.api+json") and not is_json_type("text/json-ish")
    assert host_name("[::1]:8000") == "[::1]" and host_name("Example.COM:1") == "example.com"


def test_allowed_hosts_and_api_keys_open_other_names(tiny_engine):
    with LiveServer(engine_state(tiny_engine, allowed_hosts=("gpu-box.lan",))) as live:
        ok = httpx.post(live.url + "/v1/chat/completions", json=CHAT, headers={"host": "gpu-box.lan:80"}, timeout=30)
        no = httpx.post(live.url + "/v1/chat/completions", json=CHAT, headers={"host": "other.lan"}, timeout=30)
        assert ok.status_code == 200 and no.status_code == 403
    with LiveServer(engine_state(tiny_engine, api_key="sk-x")) as live:  # the key is the check now
        auth = {"authorization": "Bearer sk-x", "host": "anything.example"}
        assert httpx.post(live.url + "/v1/chat/completions", json=CHAT, headers=auth, timeout=30).status_code == 200
        text = httpx.post(live.url + "/v1/chat/completions", content=b"{}", timeout=30,
                          headers={**auth, "content-type": "text/plain"})
        assert text.status_code == 400  # parsed as JSON like any body once the key checked out


def test_serving_beyond_loopback_without_a_key_warns(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(serve_module, "load_state", lambda model, **kw: seen.update(kw) or types.SimpleNamespace(
        engine=types.SimpleNamespace(shutdown=lambda: seen.update(shut=True))))
    monkeypatch.setattr(serve_module, "create_app", lambda state: state)
    monkeypatch.setattr(serve_module.uvicorn, "run", lambda app, host, port, log_level: seen.update(host=host))
    monkeypatch.delenv("DEEPINFER_API_KEY", raising=False)
    parser = argparse.ArgumentParser()
    serve_cli.add_arguments(parser)
    serve_cli.run(parser.parse_args(["--host", "0.0.0.0", "--max-body-bytes", "1000", "--allowed-hosts", "a.lan",
                                     "b.lan", "--compile-workers", "3"]))
    err = capsys.readouterr().err
    assert "warning: serving on 0.0.0.0 without --api-key" in err
    assert seen["host"] == "0.0.0.0" and seen["max_body_bytes"] == 1000 and seen["compile_workers"] == 3
    assert seen["allowed_hosts"] == ("a.lan", "b.lan") and seen["shut"]
    serve_cli.run(parser.parse_args(["--api-key", "sk-1", "--host", "0.0.0.0"]))
    serve_cli.run(parser.parse_args(["--host", "127.0.0.1"]))
    assert "warning" not in capsys.readouterr().err


def test_serve_passes_its_quantization_choice_to_the_engine(monkeypatch):
    seen = []
    monkeypatch.setattr(serve_module, "load_state", lambda model, **kw: seen.append(kw["engine_kwargs"]) or
                        types.SimpleNamespace(engine=types.SimpleNamespace(shutdown=lambda: None)))
    monkeypatch.setattr(serve_module, "create_app", lambda state: state)
    monkeypatch.setattr(serve_module.uvicorn, "run", lambda app, host, port, log_level: None)
    parser = argparse.ArgumentParser()
    serve_cli.add_arguments(parser)
    for choice in ("int8", "none", "auto"):
        serve_cli.run(parser.parse_args(["--quantization", choice]))
    assert [kw.get("quantization", "auto") for kw in seen] == ["int8", "none", "auto"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--quantization", "q3"])
