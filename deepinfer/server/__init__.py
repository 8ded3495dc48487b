"""OpenAI- and Anthropic-compatible HTTP server over the AsyncEngine.

Parses requests, validates constraints (errors become HTTP 400), streams SSE.
Never reaches into the scheduler or model internals.

    from deepinfer.server import create_app, load_state, serve
    serve("path/to/model", port=8000)                  # what `deepinfer serve` runs
    app = create_app(load_state("path/to/model"))      # an ASGI app to mount elsewhere
"""

_EXPORTS = {"create_app": "app", "load_state": "backend", "build_state": "backend", "serve": "serve",
            "ServerConfig": "config", "BackgroundServer": "background"}


def __getattr__(name):  # imported on first use: submodules stay importable on their own
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"deepinfer.server.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'deepinfer.server' has no attribute {name!r}")


__all__ = list(_EXPORTS)
