"""Fixtures for engine tests: one tiny random model per family, engines built over it."""

from __future__ import annotations

import pytest
import torch

from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.model import load_model
from deepinfer.testing import make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer


@pytest.fixture(autouse=True)
def _one_thread():
    # Tiny tensors: with 2 threads on a shared, loaded machine each op waits on thread wake-ups.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """family -> (model, tokenizer), loaded once per session."""
    loaded = {}

    def get(family: str = "llama"):
        if family not in loaded:
            path = make_tiny_model_dir(tmp_path_factory.mktemp(f"tiny-{family}"), family=family)
            loaded[family] = (load_model(path), Tokenizer.from_pretrained(path))
        return loaded[family]

    return get


@pytest.fixture
def make_llm(tiny):
    def make(family: str = "llama", **options) -> LLM:
        model, tokenizer = tiny(family)
        options.setdefault("num_kv_blocks", 256)
        return LLM.from_engine(Engine(model, tokenizer, EngineConfig(**options)))

    return make
