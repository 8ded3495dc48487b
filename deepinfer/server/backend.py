"""Assemble a `ServerState` from parts (tests, embedding) or from a model path.

`build_state` wires an engine-like object, a tokenizer and a constraint
compiler together. `load_state` builds the real thing: the AsyncEngine on a
model (default model when None), with the engine's own GrammarCompiler, so
that admission-time compiles are cache hits for the engine.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from deepinfer.engine import AsyncEngine, resolve_model
from deepinfer.server.config import ServerConfig
from deepinfer.server.metrics import Metrics
from deepinfer.server.prompt import max_token_chars
from deepinfer.server.runner import Runner
from deepinfer.server.state import ServerState
from deepinfer.server.validation import ConstraintValidator


def build_state(engine: Any, tokenizer: Any, compiler: Any, config: ServerConfig) -> ServerState:
    if config.max_token_chars is None:
        config = dataclasses.replace(config, max_token_chars=max_token_chars(tokenizer))
    metrics = Metrics(engine)
    return ServerState(config=config, engine=engine, tokenizer=tokenizer,
                       runner=Runner(engine, tokenizer, getattr(compiler, "vocab", None), metrics.record_choice),
                       validator=ConstraintValidator(compiler, metrics.record_compile, config.json_whitespace,
                                                     config.compile_timeout_s),
                       metrics=metrics)


def load_state(model: str | None = None, *, api_key: str | None = None, model_name: str | None = None,
               json_whitespace: str | None = None, reasoning_end: str = "</think>",
               compile_timeout_s: float = 60.0,
               reasoning_aware: bool = False, default_max_tokens: int = 512,
               engine_kwargs: dict | None = None) -> ServerState:
    """Load the model and start the AsyncEngine for serving."""
    path = resolve_model(model)
    engine = AsyncEngine(str(path), **(engine_kwargs or {}))
    max_len = getattr(engine.model_config, "max_position_embeddings", None)
    config = ServerConfig(model_name=model_name or Path(model or path).name, api_key=api_key,
                          default_max_tokens=default_max_tokens, max_model_len=max_len,
                          reasoning_aware=reasoning_aware, json_whitespace=json_whitespace,
                          reasoning_end=reasoning_end, compile_timeout_s=compile_timeout_s)
    return build_state(engine, engine.tokenizer, engine.compiler, config)
