"""A replica Ray restarts after it was killed serves again, with an empty cache (slow: two model loads)."""

from __future__ import annotations

import asyncio
import time

import pytest

ray = pytest.importorskip("ray")

from deepinfer.router import ReplicaPool  # noqa: E402
from deepinfer.types import SamplingParams  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_killed_replica_is_restarted_and_serves_again(tmp_path):
    from deepinfer.testing import make_tiny_model_dir
    model = make_tiny_model_dir(tmp_path / "model")
    pool = ReplicaPool.start(str(model), 2, policy="round_robin", engine_kwargs={"kv_cache_bytes": 32 << 20},
                             num_cpus=0, ray_num_cpus=2, max_restarts=1)
    params = SamplingParams(max_tokens=4, temperature=0.0)

    async def run(ids):
        return [t async for out in pool.add_request(prompt_token_ids=ids, params=params)
                for t in out.outputs[0].token_ids]

    async def main():
        expected = await run(list(range(5, 40)))
        ray.kill(pool.replicas[0].actor, no_restart=False)
        answers = [await run(list(range(5, 40))) for _ in range(4)]  # the first may die and be retried
        deadline = time.monotonic() + 240
        while not pool.replicas[0].alive and time.monotonic() < deadline:
            await run(list(range(5, 40)))
            await asyncio.sleep(0.5)
        assert pool.replicas[0].alive and pool.replicas[0].restarts == 1
        before = pool.routed[0]
        again = [await run(list(range(5, 40))) for _ in range(2)]  # round robin: one lands on the restarted one
        assert pool.routed[0] > before
        return expected, answers + again

    try:
        expected, answers = asyncio.run(main())
        assert all(a == expected for a in answers)
    finally:
        pool.shutdown()
