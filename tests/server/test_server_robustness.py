"""Fail-closed validation, isolation between requests, cancellation, metrics (raw HTTP, real engine)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}


def post(server, path, body, **kw):
    return httpx.post(server.url + path, json=body, timeout=60, **kw)


@pytest.mark.parametrize("extra, needle", [
    ({"max_tokens": 5, "max_completion_tokens": 6}, "'max_tokens' and 'max_completion_tokens' disagree"),
    ({"top_logprobs": 2}, "'top_logprobs' requires 'logprobs': true"),
    ({"stream_options": {"include_usage": True}}, "only allowed with 'stream': true"),
    ({"guided_regex": "a+"}, "unknown field 'guided_regex'"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     "'response_format.json_schema.schema' is required"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"structured_outputs": {}}, "must set one of json, regex, choice, grammar"),
    ({"structured_outputs": {"json": "{oops"}}, "'structured_outputs.json' is not valid JSON"),
    ({"structured_outputs": {"regex": "a", "whitespace_pattern": " *"}}, "whitespace_pattern"),
    ({"tool_choice": "required"}, "no 'tools' are declared"),
    ({"temperature": 3}, "temperature"),
    ({"n": 0}, "'n'"),
    ({"regex": "[z-a]"}, "'regex':"),
    ({"ebnf": "root ::= ("}, "line 1"),
    ({"structured_outputs": {"grammar": "start: foo\n"}}, "'foo'"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages.0.role"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "u", "schema": {
        "type": "object", "properties": {"a": {"type": "array", "anyOf": [{}], "unevaluatedItems": False}}}}}},
     "unevaluatedItems"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}]},
     "'tools[0].function.parameters': not a valid JSON Schema at /type"),
    ({"tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "array", "anyOf": [{}], "unevaluatedItems": False}}}]},
     "'tools[0].function.parameters': JSON Schema"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required", "regex": "a"},
     "only one constraint"),
    ({"response_format": {"type": "structural_tag", "triggers": ["<f"],
                          "structures": [{"begin": "<g>", "schema": {}, "end": "</g>"}]}},
     "'response_format.structures[0].begin'"),
    ({"response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}},
     "'response_format', 'structured_outputs.regex'"),
])
def test_bad_requests_are_400_naming_the_field(server, extra, needle):
    r = post(server, "/v1/chat/completions", {**CHAT, **extra})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert needle in error["message"], error["message"]
    assert error["type"] == "invalid_request_error"


def test_malformed_body(server):
    r = httpx.post(server.url + "/v1/chat/completions", content=b"{not json", timeout=30,
                   headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/messages", content=b"[1, 2]", timeout=30,
                   headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["message"] == "the request body must be a JSON object"


def test_context_length(server):
    r = post(server, "/v1/chat/completions", {**CHAT, "max_tokens": 5000})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"


def test_responses_and_anthropic_validation(server):
    r = post(server, "/v1/responses", {"model": "tiny", "input": "x", "previous_response_id": "resp_1"})
    assert r.status_code == 400 and "previous_response_id" in r.json()["error"]["message"]
    r = post(server, "/v1/messages", {"model": "tiny", "max_tokens": 5, "messages": CHAT["messages"],
                                      "tools": [{"name": "f", "input_schema": {"type": "object"}}],
                                      "tool_choice": {"type": "tool"}})
    assert r.status_code == 400 and "needs a 'name'" in r.json()["error"]["message"]
    r = post(server, "/v1/messages", {"model": "tiny", "max_tokens": 5, "messages": CHAT["messages"],
                                      "tools": [{"name": "f", "input_schema": {"type": "objekt"}}]})
    assert r.status_code == 400 and r.json()["type"] == "error"
    assert "'tools[0].input_schema': not a valid JSON Schema at /type" in r.json()["error"]["message"]
    r = post(server, "/v1/responses", {"model": "tiny", "input": "x", "tools": [
        {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"a": {"minimum": "x"}}}}]})
    assert r.status_code == 400 and "'tools[0].parameters'" in r.json()["error"]["message"]
    assert "/properties/a/minimum" in r.json()["error"]["message"]


def test_bad_requests_do_not_disturb_a_stream_in_flight(server):
    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            body = {**CHAT, "stream": True, "max_tokens": 40, "seed": 3, "regex": "[a-z]{40}"}

            async def stream_text():
                text = ""
                async with client.stream("POST", "/v1/chat/completions", json=body) as r:
                    async for line in r.aiter_lines():
                        if line.startswith("data: {"):
                            chunk = json.loads(line[6:])
                            text += chunk["choices"][0]["delta"].get("content") or ""
                return text

            async def bad_ones():
                codes = []
                for extra in ({"regex": "(a)\\1"}, {"ebnf": "root ::= x"}, {"bogus": 1}):
                    codes.append((await client.post("/v1/chat/completions", json={**CHAT, **extra})).status_code)
                return codes

            alone = await stream_text()
            together, codes = await asyncio.gather(stream_text(), bad_ones())
            return alone, together, codes

    alone, together, codes = asyncio.run(scenario())
    assert codes == [400, 400, 400]
    assert len(alone) == 40 and together == alone  # same seed: byte-identical despite the failures


def test_client_disconnect_aborts_the_engine_request(server, tiny_engine):
    body = {**CHAT, "stream": True, "max_tokens": 2000, "seed": 1, "regex": "[a-z]+"}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                break
    deadline = time.time() + 20
    while tiny_engine.engine.has_unfinished() and time.time() < deadline:
        time.sleep(0.05)
    assert not tiny_engine.engine.has_unfinished()


def test_completions_logprobs_echo_and_stop(server):
    r = post(server, "/v1/completions", {"model": "tiny", "prompt": "abc", "max_tokens": 6, "seed": 2,
                                         "logprobs": 2, "echo": True, "regex": "[0-9]{6}"})
    choice = r.json()["choices"][0]
    assert choice["text"].startswith("abc") and choice["text"][3:].isdigit()
    lp = choice["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["text_offset"])
    assert lp["text_offset"][0] == 3 and all(len(top) <= 2 for top in lp["top_logprobs"])
    r = post(server, "/v1/completions", {"model": "tiny", "prompt": "abc", "max_tokens": 20, "seed": 2,
                                         "regex": "[0-9]{5}x[0-9]{5}", "stop": "x"})
    choice = r.json()["choices"][0]
    assert choice["text"].isdigit() and len(choice["text"]) == 5 and choice["finish_reason"] == "stop"


def test_anthropic_stop_sequence(server):
    r = post(server, "/v1/messages", {"model": "tiny", "max_tokens": 20, "messages": CHAT["messages"],
                                      "regex": "[0-9]{3}STOP[0-9]{3}", "stop_sequences": ["STOP"], "seed": 1})
    body = r.json()
    assert body["stop_reason"] == "stop_sequence" and body["stop_sequence"] == "STOP", body
    assert body["content"][0]["text"].isdigit()


def test_streamed_n_choices(server):
    body = {**CHAT, "stream": True, "n": 3, "max_tokens": 8, "seed": 5, "structured_outputs":
            {"choice": ["alpha", "beta", "gamma"]}}
    texts = {0: "", 1: "", 2: ""}
    finished = set()
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                choice = json.loads(line[6:])["choices"][0]
                texts[choice["index"]] += choice["delta"].get("content") or ""
                if choice["finish_reason"]:
                    finished.add(choice["index"])
    assert finished == {0, 1, 2} and all(t in ("alpha", "beta", "gamma") for t in texts.values())


def test_prefix_cache_hits_show_in_usage(server):
    body = {"model": "tiny", "max_tokens": 2, "seed": 1, "regex": "[0-9]{2}",
            "messages": [{"role": "user", "content": "a long shared prefix " * 12}]}
    first = post(server, "/v1/chat/completions", body).json()["usage"]
    second = post(server, "/v1/chat/completions", body).json()["usage"]
    assert first["prompt_tokens"] == second["prompt_tokens"] > 32
    assert second["prompt_tokens_details"]["cached_tokens"] >= 32


def test_tool_choice_auto_leaves_text_alone(server):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    r = post(server, "/v1/chat/completions", {**CHAT, "tools": [tool], "max_tokens": 4, "seed": 4,
                                              "regex": "[a-z]{4}"})
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] in ("stop", "length") and len(choice["message"]["content"]) == 4
    assert "tool_calls" not in choice["message"]


def test_many_concurrent_requests_match_their_solo_runs(server):
    import re

    def body(i):
        return {**CHAT, "max_tokens": 12, "seed": 100 + i, "regex": "[a-z]{3,10}",
                "messages": [{"role": "user", "content": f"request {i} " * (i % 4 + 1)}]}

    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            async def one(i):
                r = await client.post("/v1/chat/completions", json=body(i))
                return r.json()["choices"][0]["message"]["content"]
            together = await asyncio.gather(*(one(i) for i in range(16)))
            solo = [await one(i) for i in (0, 7, 15)]
            return together, solo

    together, solo = asyncio.run(scenario())
    assert all(re.fullmatch("[a-z]{3,10}", t) for t in together)
    assert [together[i] for i in (0, 7, 15)] == solo  # seeded: batch composition changes nothing


def test_engine_refused_sampling_values_are_400_before_streaming(server):
    r = post(server, "/v1/chat/completions", {**CHAT, "stream": True, "top_k": -5})
    assert r.status_code == 400, r.text
    r = post(server, "/v1/chat/completions", {**CHAT, "stream": True, "min_p": 0.5, "top_p": 0.5,
                                              "logit_bias": {"abc": 1}})
    assert r.status_code == 400 and "logit_bias" in r.json()["error"]["message"]


def test_completions_refuse_reasoning_aware(server):
    r = post(server, "/v1/completions", {"model": "tiny", "prompt": "x", "reasoning_aware": True, "regex": "a"})
    assert r.status_code == 400 and "chat routes only" in r.json()["error"]["message"]
