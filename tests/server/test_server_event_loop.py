"""The event loop never waits on a request's work: large bodies are parsed, tokenized, checked
and compiled in worker threads, and refused early when their size alone says so (raw HTTP)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from server_helpers import LiveServer, engine_state

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def roomy_server(tiny_engine):
    """Bodies up to 16 MB get past the size limit, so the later stages are what is measured."""
    with LiveServer(engine_state(tiny_engine, default_max_tokens=8, max_model_len=2048,
                                 max_body_bytes=16 << 20, json_whitespace="compact")) as live:
        yield live


def wide_schema(properties: int = 200, description: int = 5000) -> dict:
    """About 1 MB of JSON Schema that compiles (in ~0.3 s, metaschema check included)."""
    return {"type": "object", "additionalProperties": False, "required": [f"p{i}" for i in range(properties)],
            "properties": {f"p{i}": {"type": "string", "maxLength": 8, "description": "d" * description}
                           for i in range(properties)}}


class Probe(threading.Thread):
    """Polls /health every 10 ms and records each answer's latency."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.latencies, self.stop = url, [], threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set():
                start = time.perf_counter()
                assert client.get(self.url + "/health").status_code == 200
                self.latencies.append(time.perf_counter() - start)
                time.sleep(0.01)


class Stream(threading.Thread):
    """A long completion stream; records when each chunk arrived."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.arrivals, self.started = url, [], threading.Event()

    def run(self) -> None:
        body = {"model": "tiny", "prompt": "a long story", "max_tokens": 400, "seed": 1, "stream": True,
                "logit_bias": {"0": -100, "1": -100, "2": -100}}  # no special token ends it early
        with httpx.stream("POST", self.url + "/v1/completions", json=body, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    self.arrivals.append(time.perf_counter())
                    self.started.set()


def worst_pauses(url: str, bodies: list[tuple[str, bytes]]) -> tuple[float, float, list[int]]:
    """(longest inter-token gap of a stream, longest /health answer, statuses) while `bodies`
    are posted one after the other."""
    stream, probe = Stream(url), Probe(url)
    stream.start()
    assert stream.started.wait(30)
    probe.start()
    time.sleep(0.2)
    begin = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as client:
        answers = [client.post(path, content=body, headers=JSON) for path, body in bodies]
    end = time.perf_counter()
    time.sleep(0.2)
    probe.stop.set()
    probe.join(10)
    stream.join(60)
    during = [b - a for a, b in zip(stream.arrivals, stream.arrivals[1:]) if b >= begin and a <= end]
    assert len(during) >= 5, "the stream ended before the large requests were handled"
    return max(during), max(probe.latencies), [(r.status_code, r.json().get("error")) for r in answers]


def test_health_and_streams_keep_their_pace_while_huge_bodies_arrive(roomy_server):
    url = roomy_server.url
    prompt = json.dumps({"model": "tiny", "prompt": "word " * (2 << 20), "max_tokens": 4}).encode()  # 10 MB
    schema = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
                         "response_format": {"type": "json_schema",
                                             "json_schema": {"name": "w", "schema": wide_schema()}}}).encode()
    assert len(prompt) > 10_000_000 and len(schema) > 1_000_000
    # The process's first JSON Schema compile freezes the heap once (a full GC pass, every thread
    # stopped): a one-time cost of the constraint compiler, paid here before measuring.
    warm = httpx.post(url + "/v1/chat/completions", timeout=60, json={
        "model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "string"}}}})
    assert warm.status_code == 200, warm.text
    # Work done on the event loop would stall every attempt alike, by at least the ~0.3 s the wide
    # schema takes to compile (seconds for the 10 MB prompt); a loaded machine stalls some attempts
    # by a GIL switch interval or two.
    runs = []
    for _ in range(4):
        gap, health, answers = worst_pauses(url, [("/v1/completions", prompt), ("/v1/chat/completions", schema)])
        assert answers[0][0] == 400 and answers[0][1]["code"] == "context_length_exceeded", answers[0]
        # compiled (off the loop), then refused: no complete output of the wide schema fits 2 tokens
        assert answers[1][0] == 400 and answers[1][1]["param"] == "max_tokens", answers[1]
        runs.append((round(gap, 3), round(health, 3)))
        if gap < 0.2 and health < 0.2:
            return
    raise AssertionError(f"(longest inter-token gap, longest /health) in seconds, per run: {runs}")


def test_bodies_over_the_limit_are_413_before_parsing(server):
    big = b'{"model": "tiny", "prompt": "' + b"x" * (5 << 20) + b'"}'
    r = httpx.post(server.url + "/v1/completions", content=big, headers=JSON, timeout=30)
    assert r.status_code == 413 and "--max-body-bytes" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/messages", content=big, headers=JSON, timeout=30)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"  # Anthropic's shape

    def chunked():  # no Content-Length: the limit counts the bytes as they come
        for _ in range(80):
            yield b"x" * (64 << 10)

    r = httpx.post(server.url + "/v1/completions", content=chunked(), headers=JSON, timeout=30)
    assert r.status_code == 413
    assert httpx.get(server.url + "/health").status_code == 200


def test_a_prompt_too_long_by_its_characters_is_never_tokenized(server, monkeypatch):
    calls = []
    real = server.state.tokenizer.encode
    monkeypatch.setattr(server.state.tokenizer, "encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    limit = server.state.config.max_model_len * server.state.config.max_token_chars * 2
    r = httpx.post(server.url + "/v1/chat/completions", timeout=30, json={
        "model": "tiny", "messages": [{"role": "user", "content": "y" * (limit + 10)}]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
    assert calls == []
    r = httpx.post(server.url + "/v1/completions", timeout=30,
                   json={"model": "tiny", "prompt": "short", "max_tokens": 2})
    assert r.status_code == 200 and calls == [1]
