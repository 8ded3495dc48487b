"""Wire-level checks on the real engine (tiny model): routes, auth, errors, SSE shapes (raw HTTP)."""

from __future__ import annotations

import json

import httpx
import pytest

from deepinfer.server import sse


def post(server, path, body, **headers):
    return httpx.post(server.url + path, json=body, headers=headers, timeout=30)


def compile_count(server) -> float:
    return server.state.metrics.registry.get_sample_value("deepinfer:constraint_compile_time_seconds_count")


def test_health_and_models(server):
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    models = httpx.get(server.url + "/v1/models").json()
    assert models["data"][0]["id"] == "tiny"


def test_chat_regex_extra_field(server):
    r = post(server, "/v1/chat/completions",
             {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "regex": "(yes|no)", "seed": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["choices"][0]["message"]["content"] in ("yes", "no")
    assert body["usage"]["prompt_tokens"] > 0


def test_unknown_field_is_400(server):
    r = post(server, "/v1/chat/completions",
             {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "guided_json": {"type": "object"}})
    assert r.status_code == 400
    err = r.json()["error"]
    assert "guided_json" in err["message"] and err["type"] == "invalid_request_error"


def test_two_constraints_is_400(server):
    r = post(server, "/v1/chat/completions",
             {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "regex": "a",
              "structured_outputs": {"choice": ["x", "y"]}})
    assert r.status_code == 400
    assert "regex" in r.json()["error"]["message"] and "structured_outputs.choice" in r.json()["error"]["message"]


@pytest.mark.parametrize("pattern, where", [("(a)\\1", "backreference '\\1' at offset 3"),
                                            ("ab[", "at offset 2"), ("a{3,1}", "at offset 1")])
def test_bad_regex_is_400_with_position(server, pattern, where):
    r = post(server, "/v1/chat/completions",
             {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "regex": pattern})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["message"].startswith("'regex': ") and where in error["message"], error["message"]
    assert error["param"] == "regex" and error["code"] == "invalid_constraint"


def test_anthropic_error_shape(server):
    r = post(server, "/v1/messages", {"model": "tiny", "max_tokens": 5,
                                           "messages": [{"role": "user", "content": "hi"}], "bogus": 1})
    assert r.status_code == 400
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"


def test_stream_chat_sse(server):
    with httpx.stream("POST", server.url + "/v1/chat/completions", timeout=30,
                      json={"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                            "regex": "[a-z]{3,6}", "stream_options": {"include_usage": True}, "seed": 3}) as r:
        lines = [l for l in r.iter_lines() if l]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(l[6:]) for l in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert 3 <= len(text) <= 6 and text.isalpha()
    assert chunks[-1]["usage"]["completion_tokens"] > 0


def test_auth(keyed_server):
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.get(keyed_server.url + "/health").status_code == 200
    assert post(keyed_server, "/v1/chat/completions", body).status_code == 401
    assert post(keyed_server, "/v1/chat/completions", body, Authorization="Bearer nope").status_code == 401
    assert post(keyed_server, "/v1/chat/completions", body, Authorization="Bearer sk-test").status_code == 200
    r = post(keyed_server, "/v1/messages", {"model": "tiny", "max_tokens": 3, "messages": body["messages"]},
             **{"x-api-key": "sk-test"})
    assert r.status_code == 200, r.text
    assert httpx.get(keyed_server.url + "/metrics").status_code == 401


def test_refused_constraints_are_remembered(server):
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}],
            "structured_outputs": {"grammar": 'start: "a" undefined_rule_xyz\n'}}
    first = post(server, "/v1/chat/completions", body)
    compiles = compile_count(server)
    again = post(server, "/v1/chat/completions", body)
    assert first.status_code == again.status_code == 400
    assert again.json()["error"]["message"] == first.json()["error"]["message"]
    assert "undefined_rule_xyz" in again.json()["error"]["message"]
    assert compile_count(server) == compiles  # served from the refusal cache


def test_models_via_sdk(server):
    import openai
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    assert [m.id for m in client.models.list()] == ["tiny"]
    assert client.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError, match="not served here"):
        client.models.retrieve("gpt-9")


@pytest.mark.parametrize("method, path", [("POST", "/v1/chat/completions"), ("POST", "/v1/completions"),
                                          ("POST", "/v1/responses"), ("POST", "/v1/messages"),
                                          ("GET", "/v1/models"), ("GET", "/metrics")])
def test_every_route_but_health_needs_the_key(keyed_server, method, path):
    url = keyed_server.url + path
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"}):
        r = httpx.request(method, url, headers=headers, content=b"{not json", timeout=30)
        assert r.status_code == 401, (path, headers, r.text)  # refused before the body is even read
        shape = r.json()
        assert (shape["error"]["type"] == "authentication_error"
                if path != "/v1/messages" else shape["type"] == "error")
    for headers in ({"Authorization": "Bearer sk-test"}, {"x-api-key": "sk-test"}):
        r = httpx.request(method, url, headers=headers, content=b"{not json", timeout=30)
        assert r.status_code in (200, 400), (path, headers, r.text)  # past auth: GETs answer, POSTs 400


def test_stream_events_hold_no_character_a_line_splitter_breaks_on():
    """U+2028, U+2029 and U+0085 in generated text stay inside their event: httpx's aiter_lines
    (str.splitlines) ends lines there, SSE does not."""
    text = "a\u2028b\u2029c\x85d"
    for framed in (sse.data({"t": text}), sse.event("delta", {"t": text})):
        lines = framed.splitlines()
        assert json.loads(lines[-2][len("data: "):]) == {"t": text} and lines[-1] == ""
