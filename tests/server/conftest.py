"""Live servers on loopback for the server tests: uvicorn in a thread, random free port."""

from __future__ import annotations

import pytest

from server_helpers import LiveServer, engine_state


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_engine(tiny_model_dir):
    """The real AsyncEngine on a tiny random model (small KV pool: tests never need more)."""
    from deepinfer.engine import AsyncEngine
    engine = AsyncEngine(str(tiny_model_dir), kv_cache_bytes=64 << 20)
    yield engine
    engine.shutdown()


@pytest.fixture(scope="module")
def server(tiny_engine):
    """A live server on the real engine, for the SDK and wire tests."""
    # compact JSON: a random model would otherwise spend its tokens on (bounded) whitespace
    with LiveServer(engine_state(tiny_engine, default_max_tokens=24, max_model_len=2048,
                                 json_whitespace="compact")) as live:
        yield live


@pytest.fixture(scope="module")
def keyed_server(tiny_engine):
    with LiveServer(engine_state(tiny_engine, api_key="sk-test", default_max_tokens=8)) as live:
        yield live
