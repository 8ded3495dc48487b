"""A request the model faults on (after admission) ends with an error of its own; the streams
open beside it finish with the text they give alone, and no KV block is left held (raw HTTP)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from deepinfer.engine import AsyncEngine, Engine, EngineConfig
from deepinfer.model import load_model
from deepinfer.testing import FaultyModel
from deepinfer.tokenizer import Tokenizer
from server_helpers import LiveServer, engine_state

PROMPTS = [f"stream {i} says" for i in range(4)]


@pytest.fixture(scope="module")
def faulty(tiny_model_dir):
    """(live server, engine, poison id) over a tiny model that faults whenever `poison` is fed."""
    tokenizer = Tokenizer.from_pretrained(tiny_model_dir)
    used = {t for p in PROMPTS + ["bad"] for t in tokenizer.encode(p)}
    poison = next(t for t in range(200, 10_000) if t not in used)
    model = FaultyModel(load_model(tiny_model_dir), poison)
    engine = AsyncEngine(engine=Engine(model, tokenizer, EngineConfig(num_kv_blocks=128, batch_invariant=True)))
    with LiveServer(engine_state(engine, default_max_tokens=24, max_model_len=2048)) as live:
        yield live, engine, poison
    engine.shutdown()


def good_body(i: int, poison: int) -> dict:
    # The good streams never sample the poison id (-100), so only the bad request feeds it.
    return {"model": "tiny", "prompt": PROMPTS[i], "max_tokens": 24, "seed": 40 + i, "stream": True,
            "temperature": 0.9, "logit_bias": {str(poison): -100}}


async def stream_text(client: httpx.AsyncClient, body: dict, started: asyncio.Event | None = None):
    """(text, error events) of one streamed completion."""
    text, errors = "", []
    async with client.stream("POST", "/v1/completions", json=body) as r:
        assert r.status_code == 200, await r.aread()
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    errors.append(chunk["error"])
                    continue
                text += chunk["choices"][0]["text"]
                if started is not None and chunk["choices"][0]["text"]:
                    started.set()
    return text, errors


def test_a_faulting_request_fails_alone_and_open_streams_finish_unchanged(faulty):
    live, engine, poison = faulty
    bad = {"model": "tiny", "prompt": "bad", "max_tokens": 8, "logit_bias": {str(poison): 100}}

    async def scenario():
        async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
            alone = await asyncio.gather(*(stream_text(client, good_body(i, poison)) for i in range(4)))
            started = [asyncio.Event() for _ in range(4)]
            streams = [asyncio.create_task(stream_text(client, good_body(i, poison), started[i]))
                       for i in range(4)]
            await asyncio.gather(*(e.wait() for e in started))  # every stream is mid-generation
            plain = client.post("/v1/completions", json=bad)
            streamed = stream_text(client, {**bad, "stream": True})
            plain, streamed = await asyncio.gather(plain, streamed)
            health = await client.get("/health")
            return alone, await asyncio.gather(*streams), plain, streamed, health

    alone, together, plain, (_, stream_errors), health = asyncio.run(scenario())
    assert plain.status_code == 500, plain.text
    message = plain.json()["error"]["message"]
    assert "IndexError: INDICES element is out of DATA bounds (injected)" in message, message
    assert "other requests went on" in message
    assert len(stream_errors) == 1 and "injected" in stream_errors[0]["message"], stream_errors
    assert all(text for text, _ in alone) and all(not errors for _, errors in alone + together)
    assert together == alone
    assert health.status_code == 200
    assert engine.engine.model.faults >= 2
    for _ in range(200):  # the engine thread frees finished requests' blocks after its last step
        if not engine.engine.requests:
            break
        time.sleep(0.01)
    blocks = engine.engine.blocks
    assert not engine.engine.requests and blocks.num_free_blocks == blocks.num_blocks
