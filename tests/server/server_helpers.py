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


def accepts(compiler, spec, text: str) -> bool:
    """Whether a grammar or composed (IR) ConstraintSpec's language contains `text` (walks the
    compiled automaton)."""
    compiled = (compiler.compile_ir(spec.value) if spec.kind == "ir"
                else compiler.compile_grammar(spec.value, syntax=spec.syntax))
    automaton = compiled.automaton
    state = automaton.advance_bytes(automaton.initial_state(), text.encode())
    return state is not None and automaton.is_accepting(state)
