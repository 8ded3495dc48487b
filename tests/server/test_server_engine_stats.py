"""`AsyncEngine.stats()` (what /metrics reports) is fresh after an abort leaves the engine idle."""

from __future__ import annotations

import asyncio
import time

from deepinfer.types import SamplingParams


def test_stats_after_abort_while_idle(tiny_engine):
    async def start_then_abort():
        stream = tiny_engine.add_request(prompt_token_ids=[5, 6, 7], request_id="stats-abort",
                                         params=SamplingParams(max_tokens=10_000, ignore_eos=True))
        await stream.__anext__()  # running now
        await stream.aclose()  # leaving the iterator aborts the request

    asyncio.run(start_then_abort())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        stats = tiny_engine.stats()
        if stats["num_running"] == 0 and stats["num_waiting"] == 0 and stats["num_pending_commands"] == 0:
            break
        time.sleep(0.02)
    assert stats["num_running"] == 0 and stats["num_waiting"] == 0, stats
    assert stats["kv_usage"] == 0.0, stats
