"""Nothing one request sends reaches another: bad inputs are refused before admission (raw HTTP)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from deepinfer.engine.admission import RequestError
from deepinfer.types import SamplingParams

JSON = {"content-type": "application/json"}


def stream_body(i: int) -> dict:
    return {"model": "tiny", "prompt": f"stream {i} says", "max_tokens": 24, "seed": 40 + i, "stream": True}


async def stream_text(client: httpx.AsyncClient, i: int, started: asyncio.Event | None = None) -> str:
    text = ""
    async with client.stream("POST", "/v1/completions", json=stream_body(i)) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                assert "error" not in chunk, chunk
                text += chunk["choices"][0]["text"]
                if started is not None:
                    started.set()
    return text


def bad_bodies(vocab: int) -> list[tuple[bytes, str]]:
    """(raw body, the field its 400 must name): each once crashed a step or answered 500."""
    base = {"model": "tiny", "prompt": "x", "max_tokens": 4}

    def raw(**fields) -> bytes:
        return json.dumps({**base, **fields}).encode()

    return [
        (raw(prompt=[vocab]), "prompt"),  # an id equal to the vocabulary size
        (raw(prompt=[5, -1]), "prompt"),
        (raw(prompt=[2 ** 64]), "prompt"),
        (raw(logit_bias={str(vocab): 1}), "logit_bias"),
        (raw(logit_bias={"5": 101}), "logit_bias"),
        (b'{"model":"tiny","prompt":"x","max_tokens":4,"logprobs":2,"logit_bias":{"5":NaN}}', "logit_bias.5"),
        (raw(regex="[ab]+", logit_bias={str(t): -1e300 for t in range(vocab)}), "logit_bias"),
        (raw(seed=2 ** 70), "seed"),
        (b'{"model":"tiny","prompt":"x","max_tokens":4,"temperature":Infinity}', "temperature"),
        (b'{"model":"tiny","prompt":"x","max_tokens":4,"repetition_penalty":1e999}', "repetition_penalty"),
    ]


def test_bad_requests_are_refused_by_name_and_open_streams_finish_unchanged(server, tiny_engine):
    vocab = tiny_engine.model_config.vocab_size

    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            alone = await asyncio.gather(*(stream_text(client, i) for i in range(4)))
            started = [asyncio.Event() for _ in range(4)]
            streams = [asyncio.create_task(stream_text(client, i, started[i])) for i in range(4)]
            await asyncio.gather(*(e.wait() for e in started))  # every stream is mid-generation
            answers = [await client.post("/v1/completions", content=body, headers=JSON)
                       for body, _ in bad_bodies(vocab)]
            return alone, await asyncio.gather(*streams), answers

    alone, together, answers = asyncio.run(scenario())
    for (body, field), r in zip(bad_bodies(vocab), answers):
        assert r.status_code == 400, (body[:80], r.text)
        error = r.json()["error"]
        assert error["param"] == field and f"'{field}" in error["message"], (body[:80], error)
    assert all(alone) and together == alone


def test_token_ids_past_the_vocabulary_are_refused_on_every_route(server, tiny_engine):
    vocab = tiny_engine.model_config.vocab_size
    r = httpx.post(server.url + "/v1/completions", timeout=30,
                   json={"model": "tiny", "prompt": [1, vocab - 1], "max_tokens": 2})
    assert r.status_code == 200, r.text  # the last id is fine
    r = httpx.post(server.url + "/v1/chat/completions", timeout=30,
                   json={"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                         "logit_bias": {str(vocab + 7): 5}})
    assert r.status_code == 400 and r.json()["error"]["param"] == "logit_bias"
    assert f"ids 0 to {vocab - 1}" in r.json()["error"]["message"]


VOCAB = object()  # stands for the engine's vocabulary size


@pytest.mark.parametrize("prompt, params, field", [
    ([VOCAB], SamplingParams(), "prompt_token_ids"),
    ([-1], SamplingParams(), "prompt_token_ids"),
    ([], SamplingParams(), "prompt_token_ids"),
    ([1], SamplingParams(stop_token_ids=[10 ** 6]), "stop_token_ids"),
    ([1], SamplingParams(logit_bias={3: float("nan")}), "logit_bias"),
    ([1], SamplingParams(logit_bias={-3: 1.0}), "logit_bias"),
    ([1], SamplingParams(seed=2 ** 63), "seed"),
    ([1], SamplingParams(seed=2 ** 62, n=2), "seed"),
])
def test_the_engine_refuses_what_no_step_could_run(tiny_engine, prompt, params, field):
    """Library callers get the same protection: add_request raises, nothing else is touched."""
    prompt = [tiny_engine.model_config.vocab_size if t is VOCAB else t for t in prompt]

    async def submit():
        async for _ in tiny_engine.add_request(prompt_token_ids=prompt, params=params):
            pass

    with pytest.raises(RequestError) as caught:
        asyncio.run(submit())
    assert caught.value.field == field and str(caught.value).startswith(f"{field}: ")
