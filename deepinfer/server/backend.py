"""Assemble a `ServerState` from parts (tests, embedding) or from a model path.

`build_state` wires an engine-like object, a tokenizer and a constraint
compiler together. `load_state` builds the real thing: the AsyncEngine on a
model (default model when None), with the engine's own GrammarCompiler, so
that admission-time compiles are cache hits for the engine, warmed up before
it serves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from deepinfer.engine import AsyncEngine, resolve_model
from deepinfer.router import ReplicaPool
from deepinfer.server.config import ServerConfig
from deepinfer.server.metrics import Metrics
from deepinfer.server.prompt import max_token_chars
from deepinfer.server.runner import Runner
from deepinfer.server.state import ServerState
from deepinfer.server.validation import ConstraintValidator, compile_spec
from deepinfer.types import ConstraintSpec


def build_state(engine: Any, tokenizer: Any, compiler: Any, config: ServerConfig) -> ServerState:
    if config.max_token_chars is None:
        config = dataclasses.replace(config, max_token_chars=max_token_chars(tokenizer))
    metrics = Metrics(engine)
    return ServerState(config=config, engine=engine, tokenizer=tokenizer,
                       runner=Runner(engine, tokenizer, getattr(compiler, "vocab", None), metrics.record_choice),
                       validator=ConstraintValidator(compiler, metrics.record_compile, config.json_whitespace,
                                                     config.compile_timeout_s, config.compile_workers,
                                                     config.compile_memory_bytes),
                       metrics=metrics)


def load_state(model: str | None = None, *, model_name: str | None = None,
               engine_kwargs: dict | None = None, data_parallel: int = 1, router: str = "cache_aware",
               ray_address: str | None = None, **options: Any) -> ServerState:
    """Load the model and start the AsyncEngine for serving; `options` are ServerConfig fields
    (api_key, default_max_tokens, compile_timeout_s, max_body_bytes, allowed_hosts, ...).
    `data_parallel` > 1 (or a `ray_address`) starts that many replicas on Ray behind `router`."""
    path = resolve_model(model)
    if data_parallel != 1 or ray_address is not None:
        engine = ReplicaPool.start(str(path), data_parallel, policy=router, address=ray_address,
                                   engine_kwargs=engine_kwargs)
    else:
        engine = AsyncEngine(str(path), **(engine_kwargs or {}))
    max_len = getattr(engine.model_config, "max_position_embeddings", None)
    config = ServerConfig(model_name=model_name or Path(model or path).name, max_model_len=max_len, **options)
    state = build_state(engine, engine.tokenizer, engine.compiler, config)
    warm_up(state)
    return state


def warm_up(state: ServerState) -> None:
    """Pay the constraint compiler's one-time costs before the first request does: the vocabulary
    scan, and the heap freeze of the first JSON Schema compile (one full GC pass with every
    thread stopped, which would otherwise pause every open stream)."""
    compile_spec(state.validator.compiler, ConstraintSpec("json_schema", {"type": "string"}, "warm-up"),
                 state.config.json_whitespace)
