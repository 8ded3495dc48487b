"""Helpers shared by the server tests (a uniquely named module: every test folder has a conftest)."""

from __future__ import annotations

from deepinfer.server.app import create_app
from deepinfer.server.background import BackgroundServer


class LiveServer(BackgroundServer):
    """A live server on loopback (random free port) for a ready ServerState."""

    def __init__(self, state) -> None:
        self.state = state
        super().__init__(create_app(state))


def engine_state(engine, **config):
    from deepinfer.server.backend import build_state
    from deepinfer.server.config import ServerConfig
    return build_state(engine, engine.tokenizer, engine.compiler, ServerConfig(model_name="tiny", **config))
