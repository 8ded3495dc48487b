"""Run the server: load the model, start the AsyncEngine, serve with uvicorn."""

from __future__ import annotations

from typing import Any

import uvicorn

from deepinfer.server.app import create_app
from deepinfer.server.backend import load_state


def serve(model: str | None = None, *, host: str = "127.0.0.1", port: int = 8000, api_key: str | None = None,
          model_name: str | None = None, reasoning_aware: bool = False, json_whitespace: str | None = None,
          reasoning_end: str = "</think>", compile_timeout_s: float = 60.0, default_max_tokens: int = 512,
          engine_kwargs: dict[str, Any] | None = None, log_level: str = "info") -> None:
    """Serve `model` (default model when None) until interrupted."""
    state = load_state(model, api_key=api_key, model_name=model_name, reasoning_aware=reasoning_aware,
                       default_max_tokens=default_max_tokens, engine_kwargs=engine_kwargs,
                       json_whitespace=json_whitespace, reasoning_end=reasoning_end,
                       compile_timeout_s=compile_timeout_s)
    uvicorn.run(create_app(state), host=host, port=port, log_level=log_level)
