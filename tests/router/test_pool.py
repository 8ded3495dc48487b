"""Two engine replicas on a real local Ray cluster: outputs equal one engine's, cache-aware routing
keeps a prefix on the replica that cached it, streaming and structured output through the HTTP
front end, and a replica killed mid-request (slow-marked restart check in test_pool_slow.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest

ray = pytest.importorskip("ray")

from deepinfer.router import ReplicaError, ReplicaPool  # noqa: E402
from deepinfer.engine import LLM  # noqa: E402
from deepinfer.types import SamplingParams  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from server_helpers import engine_state, LiveServer  # noqa: E402

ENGINE = {"kv_cache_bytes": 32 << 20}
GREEDY = SamplingParams(max_tokens=12, temperature=0.0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("dist") / "model")


@pytest.fixture(scope="module")
def pool(model_dir):
    pool = ReplicaPool.start(str(model_dir), 2, policy="cache_aware", engine_kwargs=ENGINE, num_cpus=0,
                             ray_num_cpus=2, max_restarts=0)
    yield pool
    pool.shutdown()


async def run(pool, ids, params=GREEDY, request_id=None):
    tokens = []
    async for out in pool.add_request(prompt_token_ids=ids, params=params, request_id=request_id):
        tokens += out.outputs[0].token_ids
    return tokens


def prompts():
    system = list(range(3, 3 + 48))  # three full 16-token blocks shared by every user
    return [system + [60 + u, 70 + u, 80 + u] for u in range(4)] + [list(range(100, 140))]


def test_two_replicas_equal_one_engine_and_keep_a_prefix_on_one_replica(pool, model_dir):
    reference = LLM(str(model_dir), **ENGINE).generate(prompts(), GREEDY)
    expected = [list(r.outputs[0].token_ids) for r in reference]

    async def main():
        first = await run(pool, prompts()[0])  # caches the shared system prompt on one replica
        holder = max(range(2), key=lambda i: pool.index.num_blocks(i))
        assert pool.index.num_blocks(holder) >= 3
        routed = list(pool.routed)
        rest = [await run(pool, p) for p in prompts()[1:4]]  # one after another: load stays balanced
        assert pool.routed[holder] - routed[holder] == 3, pool.stats()["replicas"]
        concurrent = await asyncio.gather(*(run(pool, p) for p in prompts()))  # both replicas at once
        return [first] + rest, concurrent

    sequential, concurrent = asyncio.run(main())
    assert sequential == expected[:4]
    assert concurrent == expected
    stats = pool.stats()
    assert stats["num_live_replicas"] == 2 and stats["prefix_cache_hit_tokens"] >= 3 * 48


def test_streaming_and_structured_output_through_the_http_front_end(pool):
    with LiveServer(engine_state(pool, default_max_tokens=16, max_model_len=2048,
                                 json_whitespace="compact")) as live:
        body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                "response_format": {"type": "json_schema", "json_schema": {"name": "b", "schema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                    "additionalProperties": False}}}, "max_tokens": 40}
        with httpx.stream("POST", live.url + "/v1/chat/completions", json=body, timeout=60) as r:
            assert r.status_code == 200
            chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        assert len(chunks) > 2 and json.loads(text) in ({"ok": True}, {"ok": False})
        metrics = httpx.get(live.url + "/metrics").text
        assert "deepinfer_running_requests " in metrics  # summed over replicas
        assert 'deepinfer_replica_up{replica="0"} 1.0' in metrics and 'deepinfer_replica_up{replica="1"} 1.0' in metrics
        assert 'deepinfer_replica_kv_cache_blocks{replica="1"}' in metrics


def test_a_killed_replica_fails_its_requests_and_the_other_serves(pool):
    """Last in this module: it kills one replica for good (max_restarts=0)."""
    long = SamplingParams(max_tokens=400, temperature=0.0, ignore_eos=True)

    async def main():
        stream = pool.add_request(prompt_token_ids=list(range(5, 30)), params=long, request_id="doomed")
        first = await stream.__anext__()
        assert first.outputs[0].token_ids
        victim = next(r for r in pool.replicas if r.in_flight)
        ray.kill(victim.actor, no_restart=True)
        with pytest.raises(ReplicaError, match=f"replica {victim.index} died while running request doomed"):
            async for _ in stream:
                pass
        assert not victim.alive
        after = [await run(pool, p) for p in prompts()[:3]]
        return victim.index, after

    victim, after = asyncio.run(main())
    assert all(len(t) == GREEDY.max_tokens or t for t in after)
    assert pool.stats()["num_live_replicas"] == 1
    assert pool.stats()["replicas"][victim]["alive"] is False
