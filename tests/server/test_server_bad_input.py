"""Every bad input is a 4xx in the route's protocol shape, naming the field (raw HTTP, real engine).

The fuzz test sends random and mutated bodies to every route and requires no 5xx (in the
status or in a stream's events) and a working server afterwards; the default suite runs a
bounded, derandomized sample, `-m slow` a longer random one."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server_helpers import LiveServer, engine_state

JSON = {"content-type": "application/json"}
CHAT = {"model": "tiny", "max_tokens": 3, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def small_server(tiny_engine):
    """A short context and compile limit: whatever a fuzzed body asks for stays quick."""
    with LiveServer(engine_state(tiny_engine, default_max_tokens=4, max_model_len=96, compile_timeout_s=2.0,
                                 json_whitespace="compact")) as live:
        yield live


def raw_exchange(sock: socket.socket, port: int, body: bytes) -> tuple[int, bytes]:
    """One HTTP/1.1 request on an open connection; (status, body) of its response."""
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (port, len(body)) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(head.split()[1]), rest


@pytest.mark.parametrize("field, body", [
    ("messages[0].content", {**CHAT, "messages": [{"role": "user", "content": "a\ud800b"}]}),
    ("stop[0]", {**CHAT, "stop": ["\udfff"]}),
    ("messages[0].content[0].text", {**CHAT, "messages": [{"role": "user", "content": [{"type": "text",
                                                                                       "text": "\ud83d"}]}]}),
    ("response_format.json_schema.schema.properties.\\udc00",
     {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
         "type": "object", "properties": {"\udc00": {}}}}}}),
])
def test_a_lone_surrogate_is_a_400_and_the_connection_stays_open(server, field, body):
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        status, answer = raw_exchange(sock, port, json.dumps(body).encode())  # json escapes it: \ud800
        error = json.loads(answer)["error"]
        assert status == 400 and error["param"] == field and "surrogate" in error["message"], answer
        status, answer = raw_exchange(sock, port, json.dumps(CHAT).encode())  # same connection
        assert status == 200, answer


@pytest.mark.parametrize("path, depth", [("/v1/chat/completions", 129), ("/v1/completions", 5000),
                                         ("/v1/messages", 100_000)])
def test_deep_nesting_is_a_400(server, path, depth):
    body = b'{"model": "tiny", "metadata": ' + b"[" * depth + b"]" * depth + b"}"
    r = httpx.post(server.url + path, content=body, headers=JSON, timeout=30)
    assert r.status_code == 400 and "deeper than 128 levels" in r.text, r.text


def test_nesting_within_the_limit_reaches_the_validators(server):
    schema = {"type": "string"}
    for _ in range(40):
        schema = {"type": "array", "items": schema, "maxItems": 1}
    r = httpx.post(server.url + "/v1/chat/completions", timeout=60, json={
        **CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "d", "schema": schema}}})
    assert r.status_code in (200, 400) and (r.status_code == 200 or "invalid_constraint" in r.text), r.text


@pytest.mark.parametrize("route, extra, field", [
    ("/v1/chat/completions", b'"logprobs":true,"logit_bias":{"5":NaN}', "logit_bias.5"),
    ("/v1/completions", b'"logprobs":1,"logit_bias":{"5":-Infinity}', "logit_bias.5"),
    ("/v1/chat/completions", b'"logit_bias":{"5":-1e400}', "logit_bias.5"),
    ("/v1/chat/completions", b'"logit_bias":{"5":-101}', "logit_bias"),
    ("/v1/chat/completions", b'"logit_bias":{"x5":1}', "logit_bias"),
    ("/v1/chat/completions", b'"logit_bias":{"5":"high"}', "logit_bias.5"),
    ("/v1/chat/completions", b'"logit_bias":{"99999":1}', "logit_bias"),
])
def test_logit_bias_is_checked(server, route, extra, field):
    base = json.dumps({"model": "tiny", "max_tokens": 2, "regex": "[ab]+",
                       **({"prompt": "x"} if route == "/v1/completions" else {"messages": CHAT["messages"]})})
    r = httpx.post(server.url + route, content=base[:-1].encode() + b"," + extra + b"}", headers=JSON, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["param"] == field, r.text


# ----------------------------------------------------------------------------- fuzzing
VALID = {
    "/v1/chat/completions": {**CHAT, "seed": 1, "logprobs": True, "top_logprobs": 2, "stop": ["zz"],
                             "response_format": {"type": "json_schema", "json_schema": {
                                 "name": "o", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}},
                             "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                                 "type": "object", "properties": {"x": {"type": "string"}}}}}]},
    "/v1/completions": {"model": "tiny", "prompt": "abc", "max_tokens": 3, "logprobs": 2, "echo": True,
                        "regex": "[a-z]{1,4}", "logit_bias": {"7": 2.5}, "n": 2},
    "/v1/responses": {"model": "tiny", "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 3,
                      "text": {"format": {"type": "json_schema", "name": "r", "schema": {"type": "boolean"}}}},
    "/v1/messages": {"model": "tiny", "max_tokens": 3, "messages": CHAT["messages"], "system": "be brief",
                     "stop_sequences": ["q"], "tools": [{"name": "g", "input_schema": {"type": "object"}}],
                     "tool_choice": {"type": "auto"}},
}
GETS = ["/health", "/metrics", "/v1/models", "/v1/models/tiny", "/v1/models/%ff%00"]

scalars = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats()
           | st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfffb", "", "[", "{}", "root ::= x"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def paths_of(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_of(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from paths_of(child, prefix + (i,))


def mutate(body, path, action, value, key):
    """`body` with the value at `path` replaced, deleted, or given a new member."""
    if not path:
        return value if action == "replace" else body
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif isinstance(parent[last], dict):
        parent[last][key] = value
    elif isinstance(parent[last], list):
        parent[last].append(value)
    return body


@st.composite
def requests_(draw):
    """(method, path, raw body or None, headers): mutated valid bodies mostly, else noise."""
    kind = draw(st.sampled_from(["mutated"] * 6 + ["random", "bytes", "truncated", "get"]))
    if kind == "get":
        return "GET", draw(st.sampled_from(GETS)), None, {}
    route = draw(st.sampled_from(sorted(VALID)))
    body = json.loads(json.dumps(VALID[route]))
    if kind == "mutated":
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(list(paths_of(body))))
            body = mutate(body, path, draw(st.sampled_from(["replace", "delete", "insert"])), draw(json_values),
                          draw(st.text(max_size=8)))
        if isinstance(body, dict) and draw(st.booleans()):
            body["stream"] = True  # the streaming paths too: errors there travel as events
        raw = json.dumps(body).encode()
    elif kind == "random":
        raw = json.dumps(draw(json_values)).encode()
    elif kind == "truncated":
        raw = json.dumps(body).encode()
        raw = raw[:draw(st.integers(0, len(raw) - 1))]
    else:
        raw = draw(st.binary(max_size=64))
    return "POST", route, raw, JSON


def no_server_error(r: httpx.Response) -> None:
    assert r.status_code < 500, r.text[:500]
    if "text/event-stream" in r.headers.get("content-type", ""):
        for line in r.text.splitlines():  # the status went out: an error would travel as an event
            assert not (line.startswith("data: {") and '"server_error"' in line), line
            assert not (line.startswith("data: {") and '"api_error"' in line), line
            assert not (line.startswith("data: {") and '"response.failed"' in line), line
    elif r.status_code >= 400:
        error = r.json()
        assert "error" in error, error


def fuzz(server, request) -> None:
    method, path, raw, headers = request
    with httpx.Client(base_url=server.url, timeout=60) as client:
        no_server_error(client.request(method, path, content=raw, headers=headers))


def still_serving(server, tiny_engine) -> None:
    r = httpx.post(server.url + "/v1/chat/completions", json=CHAT, timeout=60)
    assert r.status_code == 200, r.text
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(FUZZ, max_examples=80, derandomize=True)
@given(request=requests_())
def test_fuzzed_bodies_never_get_a_5xx(small_server, request):
    fuzz(small_server, request)


def test_the_server_works_after_the_fuzzing(small_server, tiny_engine):
    still_serving(small_server, tiny_engine)


@pytest.mark.slow
@settings(FUZZ, max_examples=2000)
@given(request=requests_())
def test_fuzzed_bodies_never_get_a_5xx_long_run(small_server, request):
    fuzz(small_server, request)
