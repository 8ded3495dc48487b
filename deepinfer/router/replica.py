"""One data-parallel replica: a full `AsyncEngine` inside a Ray actor (`pool.py` wraps this class
with `ray.remote`, so this module needs no Ray to import).

The actor is asynchronous: `generate` is an async generator, which Ray streams to the caller
item by item (a Ray streaming generator), so deltas flow while the request runs; `abort`
ends a request whose caller left; `poll` hands the router the KV events since the last poll
and the engine's stats.
"""

from __future__ import annotations

import hashlib
from typing import Any, AsyncIterator

from deepinfer.engine import AsyncEngine
from deepinfer.types import RequestOutput, SamplingParams


def model_fingerprint(engine: Any) -> str:
    """Same for two replicas only when they run the same model: config, vocabulary, and the
    bytes of the first and last weights (replicas on different nodes load different copies)."""
    digest = hashlib.sha256(repr(sorted(vars(engine.model_config).items())).encode())
    digest.update(str(engine.model_config.vocab_size).encode())
    params = list(engine.model.parameters()) if hasattr(engine.model, "parameters") else []
    for tensor in params[:1] + params[-1:]:
        digest.update(tensor.detach().float().flatten()[:4096].numpy().tobytes())
    return digest.hexdigest()


class Replica:
    def __init__(self, model: str, engine_kwargs: dict[str, Any]) -> None:
        self.engine = AsyncEngine(model, **engine_kwargs)
        self.publishes_events = self.engine.engine.enable_kv_events()

    def describe(self) -> dict[str, Any]:
        engine = self.engine.engine
        return {"block_size": engine.blocks.block_size, "vocab_size": engine.model_config.vocab_size,
                "max_model_len": engine.max_model_len, "model_config": engine.model_config,
                "fingerprint": model_fingerprint(engine), "kv_events": self.publishes_events}

    async def generate(self, request_id: str, prompt_token_ids: list[int],
                       params: SamplingParams) -> AsyncIterator[RequestOutput]:
        async for out in self.engine.add_request(prompt_token_ids=prompt_token_ids, params=params,
                                                 request_id=request_id):
            yield out

    async def abort(self, request_id: str) -> None:
        self.engine.abort(request_id)

    async def poll(self) -> tuple[list, dict]:
        return self.engine.engine.drain_kv_events(), self.engine.stats()

    async def ping(self) -> bool:
        return True
