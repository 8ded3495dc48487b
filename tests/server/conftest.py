"""Live servers on loopback for the server tests: uvicorn in a thread, random free port."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn

from deepinfer.server.app import create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    def __init__(self, state) -> None:
        self.state = state
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(state), host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_parts(tiny_model_dir):
    from deepinfer.constraints import GrammarCompiler, Vocabulary
    from deepinfer.tokenizer import Tokenizer
    return Tokenizer.from_pretrained(tiny_model_dir), GrammarCompiler(Vocabulary.from_pretrained(tiny_model_dir))


def fake_state(tiny_parts, **config):
    from deepinfer.server.backend import build_state
    from deepinfer.server.config import ServerConfig
    from server_fake_engine import FakeAsyncEngine
    tokenizer, compiler = tiny_parts
    engine = FakeAsyncEngine(tokenizer, compiler)
    return build_state(engine, tokenizer, compiler, ServerConfig(model_name="tiny", **config))


@pytest.fixture(scope="module")
def fake_server(tiny_parts):
    with LiveServer(fake_state(tiny_parts, default_max_tokens=24)) as server:
        yield server


@pytest.fixture(scope="module")
def fake_keyed_server(tiny_parts):
    with LiveServer(fake_state(tiny_parts, api_key="sk-test", default_max_tokens=8)) as server:
        yield server


@pytest.fixture(scope="module")
def server(fake_server):
    """The server the SDK tests talk to."""
    return fake_server


@pytest.fixture(scope="module")
def keyed_server(fake_keyed_server):
    return fake_keyed_server
