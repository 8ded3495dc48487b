"""A slow constraint never makes another request wait for a compile slot (raw HTTP, real engine).

The slow compiles are simulated: a compiler that sleeps before compiling schemas titled "slow",
so the slots, not the CPU, are what is measured."""

from __future__ import annotations

import asyncio
import time

import httpx

from server_helpers import LiveServer

from deepinfer.server.backend import build_state
from deepinfer.server.config import ServerConfig

SLOW_S = 2.0


class SleepyCompiler:
    """The engine's compiler, but JSON schemas titled "slow" take SLOW_S seconds more."""

    def __init__(self, compiler) -> None:
        self.inner = compiler

    def compile_json_schema(self, schema, **options):
        if isinstance(schema, dict) and schema.get("title") == "slow":
            time.sleep(SLOW_S)
        return self.inner.compile_json_schema(schema, **options)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def sleepy_server(engine, **config):
    state = build_state(engine, engine.tokenizer, SleepyCompiler(engine.compiler),
                        ServerConfig(model_name="tiny", default_max_tokens=2, json_whitespace="compact", **config))
    return LiveServer(state)


def schema_request(title: str, tag: int) -> dict:
    schema = {"title": title, "type": "object", "properties": {f"k{tag}": {"type": "integer"}}}
    return {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}


async def timed_posts(url: str, bodies: list[dict], head_start: float = 0.2) -> list[tuple[int, float]]:
    """(status, seconds) of each body posted at once, the last one `head_start` seconds later."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        async def post(body, delay):
            await asyncio.sleep(delay)
            start = time.perf_counter()
            r = await client.post("/v1/chat/completions", json=body)
            return r.status_code, time.perf_counter() - start
        return await asyncio.gather(*(post(b, head_start if i == len(bodies) - 1 else 0)
                                      for i, b in enumerate(bodies)))


def test_a_trivial_schema_is_not_queued_behind_slow_ones(tiny_engine):
    with sleepy_server(tiny_engine, compile_workers=4) as live:
        answers = asyncio.run(timed_posts(live.url, [schema_request("slow", 1), schema_request("slow", 2),
                                                     schema_request("quick", 3)]))
        (slow1, t1), (slow2, t2), (quick, tq) = answers
        assert slow1 == slow2 == quick == 200
        assert t1 >= SLOW_S and t2 >= SLOW_S and tq < SLOW_S / 2, answers
        assert live.state.validator.pool.running == 0


def test_a_timed_out_compile_gives_its_slot_back_at_once(tiny_engine):
    with sleepy_server(tiny_engine, compile_workers=2, compile_timeout_s=0.5) as live:
        pool = live.state.validator.pool
        answers = asyncio.run(timed_posts(live.url, [schema_request("slow", 4), schema_request("slow", 5),
                                                     schema_request("quick", 6)], head_start=0.7))
        (slow1, t1), (slow2, t2), (quick, tq) = answers
        assert slow1 == slow2 == 400 and t1 < SLOW_S and t2 < SLOW_S, answers  # answered at the timeout
        # Both slots were taken by compiles still running in their threads; the quick one did not wait.
        assert quick == 200 and tq < SLOW_S / 2, answers
        assert pool.abandoned == 2 and pool.running == 0
        deadline = time.time() + 10
        while pool.abandoned and time.time() < deadline:
            time.sleep(0.05)
        assert pool.abandoned == 0


def test_concurrent_requests_with_one_constraint_share_its_compile(tiny_engine):
    calls = []

    class Counting(SleepyCompiler):
        def compile_json_schema(self, schema, **options):
            calls.append(1)
            return super().compile_json_schema(schema, **options)

    state = build_state(tiny_engine, tiny_engine.tokenizer, Counting(tiny_engine.compiler),
                        ServerConfig(model_name="tiny", default_max_tokens=2, json_whitespace="compact"))
    with LiveServer(state) as live:
        answers = asyncio.run(timed_posts(live.url, [schema_request("slow", 7)] * 3, head_start=0.1))
        assert [status for status, _ in answers] == [200, 200, 200] and len(calls) == 1


def test_past_the_abandoned_limit_a_slot_waits_for_its_thread(tiny_engine):
    """With one slot and one abandoned thread allowed, the second timed-out compile keeps its
    slot until its thread ends: threads cannot pile up without bound."""
    with sleepy_server(tiny_engine, compile_workers=1, compile_timeout_s=0.3) as live:
        pool = live.state.validator.pool
        pool.max_abandoned = 1
        answers = asyncio.run(timed_posts(live.url, [schema_request("slow", 8), schema_request("slow", 9),
                                                     schema_request("quick", 10)], head_start=0.1))
        statuses = [status for status, _ in answers]
        assert statuses == [400, 400, 200], answers
        assert answers[2][1] > SLOW_S - 0.5, answers  # waited for the second slow thread to end
