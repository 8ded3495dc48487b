"""`ReplicaPool`: N replicas behind the interface the server uses for one `AsyncEngine`.

    pool = ReplicaPool.start("path/to/model", replicas=2, policy="cache_aware")
    async for delta in pool.add_request(prompt_token_ids=ids, params=params, request_id="r1"):
        ...                                   # RequestOutput deltas, streamed through the actor
    pool.stats()                              # summed over replicas, plus each replica's own

Each request goes to one live replica (`policy.py`). A background task polls every replica for
its KV events (into `PrefixIndex`) and stats; a request that finishes polls its replica at
once, so the next request with the same prefix already sees the blocks it left. A replica
whose call fails with Ray's actor error is marked dead: its index is dropped, its in-flight
requests end with a `ReplicaError` naming it (one that produced nothing yet is retried from
scratch on another replica), new requests go to the others, and the poller brings it back
when Ray has restarted it (`max_restarts`).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from deepinfer.router.index import PrefixIndex, prompt_keys
from deepinfer.router.policy import POLICIES, ReplicaView, choose_replica
from deepinfer.router.ray_env import DistError, connect, import_ray
from deepinfer.router.replica import Replica
from deepinfer.engine import resolve_model
from deepinfer.engine.admission import check_request
from deepinfer.engine.constraints import ConstraintService
from deepinfer.errors import UserError
from deepinfer.tokenizer import Tokenizer
from deepinfer.types import RequestOutput, SamplingParams

_RATIOS = ("kv_usage", "prefix_cache_hit_rate")  # averaged over replicas, every other number summed


class ReplicaError(RuntimeError):
    """A replica died (or none is alive) while a request needed it."""


@dataclass
class _Replica:
    index: int
    actor: Any
    alive: bool = True
    in_flight: int = 0
    stats: dict = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one poll at a time: events apply in order
    restarts: int = 0


class ReplicaPool:
    def __init__(self, actors: list[Any], info: dict[str, Any], tokenizer: Any, policy: str = "cache_aware",
                 owns_ray: bool = False, poll_interval_s: float = 0.05, call_timeout_s: float = 30.0) -> None:
        if policy not in POLICIES:
            raise DistError(f"--router {policy!r}: choose one of {', '.join(POLICIES)}")
        self._ray = import_ray()
        self.replicas = [_Replica(i, a) for i, a in enumerate(actors)]
        self.policy, self.tokenizer, self.owns_ray = policy, tokenizer, owns_ray
        self.info = info
        self.block_size, self.vocab_size = info["block_size"], info["vocab_size"]
        self.max_model_len, self.model_config = info["max_model_len"], info["model_config"]
        self.index = PrefixIndex()
        self.poll_interval_s, self.call_timeout_s = poll_interval_s, call_timeout_s
        self._constraints = ConstraintService(tokenizer, self.vocab_size)  # admission-time compiles
        self._turn = itertools.count()
        self._ids = itertools.count()
        self._poller: asyncio.Task | None = None
        self.routed = [0] * len(actors)  # requests sent to each replica

    # -- start ----------------------------------------------------------------------------------
    @classmethod
    def start(cls, model: str | None, replicas: int, *, policy: str = "cache_aware", address: str | None = None,
              engine_kwargs: dict | None = None, num_cpus: float = 1.0, max_restarts: int = 3,
              ray_num_cpus: int | None = None, startup_timeout_s: float = 300.0, **options: Any) -> "ReplicaPool":
        if replicas < 1:
            raise DistError(f"--data-parallel {replicas}: needs at least 1 replica")
        if policy not in POLICIES:
            raise DistError(f"--router {policy!r}: choose one of {', '.join(POLICIES)}")
        path = str(resolve_model(model))
        owns = connect(address, ray_num_cpus)
        ray = import_ray()
        remote = ray.remote(Replica).options(num_cpus=num_cpus, max_restarts=max_restarts, max_concurrency=1000)
        actors = [remote.remote(path, dict(engine_kwargs or {})) for _ in range(replicas)]
        try:
            infos = ray.get([a.describe.remote() for a in actors], timeout=startup_timeout_s)
        except Exception as exc:
            for actor in actors:
                ray.kill(actor, no_restart=True)
            raise DistError(f"replicas of {path} did not start within {startup_timeout_s:g} s: {exc}") from None
        if len({i["fingerprint"] for i in infos}) != 1:
            for actor in actors:
                ray.kill(actor, no_restart=True)
            raise DistError(f"replicas of {path} loaded different models (their weights or configs differ): "
                            "every node must hold the same model at that path")
        return cls(actors, infos[0], Tokenizer.from_pretrained(path), policy, owns, **options)

    # -- the AsyncEngine interface ----------------------------------------------------------------
    @property
    def compiler(self):
        return self._constraints.compiler

    def check_request(self, prompt_token_ids: list[int], params: SamplingParams) -> None:
        check_request(prompt_token_ids, params, self.vocab_size, self.max_model_len)

    def abort(self, request_id: str) -> None:
        for replica in self.replicas:  # the caller does not know where it went; unknown ids are ignored
            if replica.alive:
                replica.actor.abort.remote(request_id)

    async def add_request(self, prompt: str | None = None, params: SamplingParams | None = None,
                          request_id: str | None = None, *,
                          prompt_token_ids: list[int] | None = None) -> AsyncIterator[RequestOutput]:
        self._ensure_poller()
        ids = list(prompt_token_ids) if prompt_token_ids is not None else self.tokenizer.encode(prompt)
        params = params or SamplingParams()
        request_id = request_id if request_id is not None else f"pool-{next(self._ids)}"
        self.check_request(ids, params)
        tried: set[int] = set()
        while True:
            replica = self._choose(ids, tried)
            tried.add(replica.index)
            produced, finished = False, False
            replica.in_flight += 1
            self.routed[replica.index] += 1
            try:
                async for ref in replica.actor.generate.remote(request_id, ids, params):
                    out = await ref
                    produced = produced or any(c.token_ids for c in out.outputs)
                    finished = out.finished
                    yield out
                    if finished:
                        break
            except self._ray.exceptions.RayActorError as exc:
                self._mark_dead(replica)
                if not produced and any(r.alive and r.index not in tried for r in self.replicas):
                    continue  # nothing reached the caller: run it from scratch elsewhere
                raise ReplicaError(f"replica {replica.index} died while running request {request_id}: "
                                   f"{type(exc).__name__}") from None
            except self._ray.exceptions.RayTaskError as exc:  # the engine refused or failed it
                cause = exc.as_instanceof_cause()
                raise (cause if isinstance(cause, UserError) else RuntimeError(str(exc))) from None
            finally:
                replica.in_flight -= 1
                if not finished and replica.alive:
                    replica.actor.abort.remote(request_id)
            await self._poll(replica)  # its new blocks are known before the next request is routed
            return

    def _choose(self, ids: list[int], tried: set[int]) -> _Replica:
        live = [r for r in self.replicas if r.alive and r.index not in tried]
        if not live:
            raise ReplicaError("no live replica to run the request on")
        views = [ReplicaView(r.index, r.in_flight, float(r.stats.get("kv_usage", 0.0))) for r in live]
        if self.policy == "cache_aware":
            matched = self.index.matched_blocks(prompt_keys(ids, self.block_size), [r.index for r in live])
            for view in views:
                view.matched_blocks = matched[view.index]
        return self.replicas[choose_replica(self.policy, views, next(self._turn))]

    # -- watching the replicas --------------------------------------------------------------------
    def _ensure_poller(self) -> None:
        if self._poller is None or self._poller.done():
            for replica in self.replicas:  # a new event loop (asyncio locks belong to one)
                replica.lock = asyncio.Lock()
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.gather(*(self._poll(r) if r.alive else self._revive(r) for r in self.replicas))
            await asyncio.sleep(self.poll_interval_s)

    async def _poll(self, replica: _Replica) -> None:
        async with replica.lock:
            if not replica.alive:
                return
            try:
                events, stats = await asyncio.wait_for(replica.actor.poll.remote(), self.call_timeout_s)
            except (self._ray.exceptions.RayActorError, asyncio.TimeoutError):
                self._mark_dead(replica)
                return
            self.index.apply(replica.index, events)
            replica.stats = stats

    async def refresh(self) -> None:
        """Poll every live replica now (events and stats as of this moment, e.g. before reading `stats`)."""
        await asyncio.gather(*(self._poll(r) for r in self.replicas if r.alive))

    async def _revive(self, replica: _Replica) -> None:
        """A replica Ray restarted answers again: it starts with an empty cache."""
        try:
            await asyncio.wait_for(replica.actor.ping.remote(), self.poll_interval_s * 20)
        except Exception:  # still restarting, or gone for good
            return
        replica.alive = True
        replica.restarts += 1

    def _mark_dead(self, replica: _Replica) -> None:
        replica.alive = False
        replica.stats = {}
        self.index.clear(replica.index)

    # -- introspection ----------------------------------------------------------------------------
    def stats(self) -> dict:
        live = [r for r in self.replicas if r.alive]
        total: dict[str, Any] = {}
        for replica in live:
            for key, value in replica.stats.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        for key in _RATIOS:
            if key in total:
                total[key] /= len(live)
        total["num_replicas"], total["num_live_replicas"] = len(self.replicas), len(live)
        total["replicas"] = [{"index": r.index, "alive": r.alive, "in_flight": r.in_flight, "routed": self.routed[r.index],
                              "cached_blocks": self.index.num_blocks(r.index), "restarts": r.restarts, **r.stats}
                             for r in self.replicas]
        return total

    def shutdown(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
        for replica in self.replicas:
            self._ray.kill(replica.actor, no_restart=True)
        self._constraints.shutdown()
        if self.owns_ray:
            self._ray.shutdown()
