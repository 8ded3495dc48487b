"""AsyncEngine: concurrent per-request streams, cancellation, errors, stats."""

import asyncio

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import AsyncEngine, Engine, EngineConfig
from deepinfer.engine.output import merge
from deepinfer.errors import UserError
from deepinfer.types import FinishReason


@pytest.fixture
def async_engine(tiny):
    model, tokenizer = tiny()
    engine = AsyncEngine(engine=Engine(model, tokenizer, EngineConfig(num_kv_blocks=256, batch_invariant=True)))
    yield engine
    engine.shutdown()


async def collect(engine, prompt, params, request_id=None):
    full = None
    async for delta in engine.add_request(prompt, params, request_id):
        full = merge(full, delta)
    return full


def test_many_concurrent_streams_match_offline(async_engine, make_llm):
    params = [SamplingParams(temperature=0.9, seed=i, max_tokens=8 + i % 5, ignore_eos=True) for i in range(16)]
    prompts = [f"prompt number {i}" for i in range(16)]

    async def main():
        return await asyncio.gather(*(collect(async_engine, p, sp) for p, sp in zip(prompts, params)))

    outs = asyncio.run(main())
    offline = make_llm().generate(prompts, params)
    assert [o.token_ids for o in outs] == [o.token_ids for o in offline]
    assert [o.text for o in outs] == [o.text for o in offline]
    assert all(o.finished and o.ttft is not None and o.total_time >= o.ttft for o in outs)
    stats = async_engine.stats()
    assert stats["num_running"] == 0 and stats["generation_tokens"] >= sum(len(o.token_ids) for o in outs)


def test_leaving_the_stream_aborts_and_frees(async_engine):
    async def main():
        stream = async_engine.add_request("hello", SamplingParams(max_tokens=500, ignore_eos=True), "gone")
        async for _ in stream:
            break
        await stream.aclose()
        other = await collect(async_engine, "hi", SamplingParams(max_tokens=3, ignore_eos=True))
        return other

    other = asyncio.run(main())
    assert other.finish_reason == FinishReason.LENGTH
    engine = async_engine.engine
    for _ in range(100):
        if not engine.requests:
            break
        asyncio.run(asyncio.sleep(0.01))
    assert "gone" not in engine.requests and engine.blocks.usage == 0.0


def test_abort_by_id_and_errors(async_engine):
    async def main():
        task = asyncio.create_task(collect(async_engine, "hello", SamplingParams(max_tokens=400, ignore_eos=True), "r1"))
        await asyncio.sleep(0.2)
        async_engine.abort("r1")
        aborted = await task
        bad = await collect(async_engine, "x", SamplingParams(regex="[unclosed"))
        with pytest.raises(UserError, match="context"):
            await collect_ids(async_engine, list(range(2000)))      # longer than the context
        return aborted, bad

    async def collect_ids(engine, ids):
        async for _ in engine.add_request(prompt_token_ids=ids, params=SamplingParams()):
            pass

    aborted, bad = asyncio.run(main())
    assert aborted.finish_reason == FinishReason.ABORT and len(aborted.token_ids) < 400
    assert bad.finish_reason == FinishReason.ERROR and bad.outputs[0].error
