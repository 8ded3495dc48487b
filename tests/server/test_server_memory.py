"""A refused compile leaves no memory behind: resident memory stays within a stated bound over
its post-warm-up level while refused and normal constraints alternate (numbers printed)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import httpx
import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.server.compile_pool import CompilePool
from server_helpers import LiveServer, engine_state

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def normal_schema(i: int) -> dict:
    return {"type": "object", "required": ["a"],
            "properties": {"a": {"type": "integer"}, f"b{i}": {"type": "string", "maxLength": 20}}}


def huge_schema(i: int, properties: int = 7000) -> dict:
    """~216 KB that the compiler refuses (its lowering runs past its time budget, ~2 GB built)."""
    return {"type": "object", "additionalProperties": False,
            "properties": {f"p{j}_{i}": {"type": "string"} for j in range(properties)}}


class _Node:
    __slots__ = ("parent", "children", "payload")

    def __init__(self, parent) -> None:
        self.parent, self.children, self.payload = parent, [], bytearray(64)
        if parent is not None:
            parent.children.append(self)  # parent <-> child: cycles, as a lowering's IR has


def refused_build(nodes: int = 200_000):
    """Builds ~50 MB of cyclic state held by this frame's locals, then refuses (a lowering that
    runs out of budget midway)."""
    root = _Node(None)
    tree = [root] + [_Node(root) for _ in range(nodes)]
    raise ConstraintError(f"too complex after {len(tree)} nodes")


def test_refused_compiles_in_the_pool_give_their_memory_back(tiny_engine):
    """The pool's path (a thread per compile, the error delivered to the loop), alternating with
    real compiles, whose GC freeze would keep any cycle still alive then."""
    compiler = tiny_engine.compiler
    pool = CompilePool(workers=2)

    async def rounds(count: int) -> list[float]:
        levels = []
        for i in range(count):
            with pytest.raises(ConstraintError):
                await pool.run(("huge", i), refused_build, 60)
            await pool.run(("normal", i), lambda i=i: compiler.compile_json_schema(normal_schema(i)), 60)
            levels.append(resident_mb())
        return levels

    asyncio.run(rounds(2))  # warm-up: the first compiles, allocator arenas
    base = resident_mb()
    levels = asyncio.run(rounds(6))
    print(f"\nresident MB after warm-up {base:.0f}; after each round "
          f"{' '.join(f'{x:.0f}' for x in levels)}; load average {os.getloadavg()[0]:.2f}")
    # one refused build is ~50 MB: kept, 6 rounds would add ~300 MB
    assert max(levels) - base < 40, (base, levels)


@pytest.mark.slow
def test_soak_refused_huge_schemas_and_normal_ones_on_the_server(tiny_engine):
    """50 rounds: a refused 7,000-property schema, then a normal one, over real HTTP; the server
    process's resident memory stays within 300 MB of its post-warm-up level."""
    def body(schema: dict) -> dict:
        return {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}

    # refused by the lowering's own budget ("too complex"), not by the memory limit: what this soak measures
    config = dict(default_max_tokens=4, max_body_bytes=16 << 20, json_whitespace="compact", compile_timeout_s=600,
                  compile_memory_bytes=None)
    with LiveServer(engine_state(tiny_engine, **config)) as live, \
            httpx.Client(base_url=live.url, timeout=600) as client:
        def round_trip(i: int) -> float:
            start = time.perf_counter()
            refused = client.post("/v1/chat/completions", json=body(huge_schema(i)))
            assert refused.status_code == 400 and "too complex" in refused.json()["error"]["message"]
            assert client.post("/v1/chat/completions", json=body(normal_schema(i % 5))).status_code == 200
            return time.perf_counter() - start

        round_trip(-1)  # warm-up: one refusal, the normal schema compiled
        base = resident_mb()
        levels = []
        for i in range(50):
            seconds = round_trip(i)
            levels.append(resident_mb())
            print(f"round {i}: {seconds:.1f} s, resident {levels[-1]:.0f} MB", flush=True)
    print(f"resident MB after warm-up {base:.0f}, max {max(levels):.0f}, last {levels[-1]:.0f}; "
          f"load average {os.getloadavg()[0]:.2f}")
    assert max(levels) - base < 300, (base, levels)
