"""Data-parallel replicas by simulation: a request trace, a step-cost model, routing policies.

Each replica runs continuous batching as the engine does: every step takes one token per running
decode and prompt tokens up to a budget, and costs `a + b * tokens` seconds (the engine's step cost,
fitted by `benchmarks/router.py` on the real engine or given). A replica caches prompt blocks in an
LRU of `cache_blocks`; a request's cached leading blocks are not computed. The router sees each
replica's cache exactly (as the KV events give it) and its in-flight count, and chooses with the
same `deepinfer.router.policy.choose_replica` the server uses.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from dataclasses import dataclass, field

from deepinfer.router.policy import ReplicaView, choose_replica


@dataclass
class Trace:
    systems: int = 8  # distinct shared system prompts
    system_tokens: int = 512
    user_tokens: int = 64
    output_tokens: int = 32
    requests: int = 400
    rate: float = 20.0  # arrivals per second (Poisson)
    block_size: int = 16
    seed: int = 0

    def generate(self) -> list[tuple[float, int, int]]:
        """(arrival s, system prompt id, request id) per request."""
        rng, t, out = random.Random(self.seed), 0.0, []
        for i in range(self.requests):
            t += rng.expovariate(self.rate)
            out.append((t, rng.randrange(self.systems), i))
        return out


@dataclass
class StepCost:
    a: float = 0.004  # seconds per step
    b: float = 0.00008  # seconds per token in the step


@dataclass
class _Request:
    arrival: float
    blocks: list[tuple[int, int]]  # block keys of its prompt
    prefill_left: int
    decode_left: int
    first_token: float | None = None


@dataclass
class _Replica:
    cache_blocks: int
    cache: OrderedDict = field(default_factory=OrderedDict)
    queue: list[_Request] = field(default_factory=list)
    busy_until: float | None = None

    def matched(self, blocks) -> int:
        n = 0
        for key in blocks[:-1]:
            if key not in self.cache:
                break
            n += 1
        return n

    def admit(self, request: _Request) -> int:
        hit = self.matched(request.blocks)
        for key in request.blocks:
            self.cache[key] = None
            self.cache.move_to_end(key)
        while len(self.cache) > self.cache_blocks:
            self.cache.popitem(last=False)
        self.queue.append(request)
        return hit


def simulate(trace: Trace, replicas: int, policy: str, cost: StepCost, cache_blocks: int = 256,
             step_tokens: int = 512) -> dict:
    bs = trace.block_size
    prompt_blocks = (trace.system_tokens + trace.user_tokens) // bs
    system_blocks = trace.system_tokens // bs
    pool = [_Replica(cache_blocks) for _ in range(replicas)]
    events = [(t, 0, i, s) for t, s, i in trace.generate()]  # (time, kind 0 arrival / 1 step end, id, x)
    heapq.heapify(events)
    done, hit_tokens, prompt_tokens, turn, last = [], 0, 0, 0, 0.0

    def start_step(r: int, now: float) -> None:
        replica = pool[r]
        budget, tokens = step_tokens, 0
        for request in replica.queue:  # decodes first, then prompt chunks (the engine's order)
            if request.prefill_left == 0:
                tokens += 1
                budget -= 1
        for request in replica.queue:
            if request.prefill_left and budget > 0:
                take = min(request.prefill_left, budget)
                request.prefill_left -= take
                request.chunk = take
                budget -= take
                tokens += take
        replica.busy_until = now + cost.a + cost.b * tokens
        heapq.heappush(events, (replica.busy_until, 1, r, 0))

    while events:
        now, kind, ident, system = heapq.heappop(events)
        last = max(last, now)
        if kind == 0:
            blocks = [(system, j) if j < system_blocks else (-1 - ident, j) for j in range(prompt_blocks)]
            views = [ReplicaView(i, len(p.queue), matched_blocks=p.matched(blocks)) for i, p in enumerate(pool)]
            r = choose_replica(policy, views, turn)
            turn += 1
            request = _Request(now, blocks, 0, trace.output_tokens)
            hit = pool[r].admit(request) * bs
            request.prefill_left = prompt_blocks * bs - hit
            hit_tokens, prompt_tokens = hit_tokens + hit, prompt_tokens + prompt_blocks * bs
            if pool[r].busy_until is None:
                start_step(r, now)
            continue
        replica = pool[ident]
        for request in list(replica.queue):
            if getattr(request, "chunk", 0):
                request.chunk = 0
                if request.prefill_left == 0:
                    request.first_token, request.decode_left = now, request.decode_left - 1
            elif request.prefill_left == 0:
                request.decode_left -= 1
            if request.decode_left <= 0 and request.prefill_left == 0:
                replica.queue.remove(request)
                done.append(request)
        replica.busy_until = None
        if replica.queue:
            start_step(ident, now)
    ttft = sorted(r.first_token - r.arrival for r in done)
    return {"replicas": replicas, "policy": policy, "throughput": len(done) * trace.output_tokens / last,
            "ttft_p50": ttft[len(ttft) // 2], "ttft_p99": ttft[min(len(ttft) - 1, int(len(ttft) * 0.99))],
            "hit_rate": hit_tokens / prompt_tokens}
