"""Run the server: load the model, start the AsyncEngine, serve with uvicorn.

Without an API key the server trusts whoever reaches it: it binds loopback by default,
and binding anything else without a key prints a warning (the Host check in guard.py
then still refuses names other than loopback and --allowed-hosts).
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

from deepinfer.server.app import create_app
from deepinfer.server.backend import load_state
from deepinfer.server.guard import LOOPBACK_NAMES



def is_loopback(host: str) -> bool:
    return host.lower() in LOOPBACK_NAMES or host.startswith("127.")


def open_bind_warning(host: str, api_key: str | None) -> str | None:
    """The warning to print for binding `host`, if any."""
    if api_key is not None or is_loopback(host):
        return None
    return (f"warning: serving on {host} without --api-key: anyone who can reach this port can use the "
            "model. Requests are accepted only when their Host header is a loopback name or listed in "
            "--allowed-hosts; set --api-key to serve other machines safely.")


def serve(model: str | None = None, *, host: str = "127.0.0.1", port: int = 8000, model_name: str | None = None,
          engine_kwargs: dict[str, Any] | None = None, log_level: str = "info", **options: Any) -> None:
    """Serve `model` (default model when None) until interrupted; `options` are ServerConfig
    fields (api_key, compile_timeout_s, max_body_bytes, allowed_hosts, ...)."""
    options["api_key"] = options.get("api_key") or None  # an empty key is no key
    warning = open_bind_warning(host, options["api_key"])
    if warning is not None:
        print(warning, file=sys.stderr)
    state = load_state(model, model_name=model_name, engine_kwargs=engine_kwargs, **options)
    try:
        uvicorn.run(create_app(state), host=host, port=port, log_level=log_level)
    finally:
        state.engine.shutdown()  # a replica pool also stops its Ray actors (and the Ray it started)
