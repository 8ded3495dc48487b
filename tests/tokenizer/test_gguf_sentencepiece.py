"""SentencePiece-style GGUF vocabularies (tokenizer.ggml.model = "llama", as in Llama-2/Mistral
files): rebuilt like transformers' GGUF loader rebuilds them, and streamed without broken text."""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import SentencePieceBPETokenizer

from deepinfer.testing import _CORPUS
from deepinfer.tokenizer import Tokenizer

TEXTS = ["Hello world", " leading", "The quick brown fox jumps", "héllo 😀 世界", "a  b   c\n\nd",
         "</s>x<s> y", "", 'JSON {"a": 1}', "  two leading spaces", "trailing  "]


@pytest.fixture(scope="module")
def spm_gguf(tmp_path_factory):
    """A llama.cpp-layout SentencePiece vocabulary: <unk>, <s>, </s>, 256 <0xNN> byte tokens,
    then pieces with scores falling in merge order, and no merges list."""
    trainer = SentencePieceBPETokenizer(add_prefix_space=True)
    trainer.train_from_iterator(_CORPUS, vocab_size=300, min_frequency=2, show_progress=False,
                                special_tokens=["<unk>", "<s>", "</s>"])
    pieces = sorted(json.loads(trainer.to_str())["model"]["vocab"].items(), key=lambda kv: kv[1])
    pieces = [piece for piece, _ in pieces if piece not in ("<unk>", "<s>", "</s>")]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL,
             *[gguf.TokenType.BYTE] * 256, *[gguf.TokenType.NORMAL] * len(pieces)]
    scores = [0.0] * 259 + [-float(rank) for rank in range(len(pieces))]
    path = tmp_path_factory.mktemp("spm") / "spm.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_feed_forward_length(8)
    writer.add_head_count(1)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_matches_transformers(spm_gguf):
    transformers = pytest.importorskip("transformers")
    ours = Tokenizer.from_pretrained(spm_gguf)
    theirs = transformers.AutoTokenizer.from_pretrained(str(spm_gguf.parent), gguf_file=spm_gguf.name)
    for text in TEXTS:
        ids = ours.encode(text)
        assert ids == theirs.encode(text, add_special_tokens=False), text
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)
    assert ours.encode("hi", add_special_tokens=True) == theirs.encode("hi")  # BOS by default
    assert ours.eos_token_ids == {2}


def test_streaming(spm_gguf):
    from test_detokenizer import TEXTS as STREAM_TEXTS, check_stream

    tokenizer = Tokenizer.from_pretrained(spm_gguf)

    @settings(max_examples=100, deadline=None)
    @given(text=STREAM_TEXTS, skip=st.booleans())
    def check(text, skip):
        check_stream(tokenizer, text, skip)

    check()
