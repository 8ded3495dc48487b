"""Vocabulary: exact token bytes, never-matching ids, eos ids, on real tokenizers."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from deepinfer.constraints import ConstraintError, Vocabulary
from tests.constraints.conftest import DEEPSEEK_LOGITS


def _check_bytes_against_decoder(vocab, tokenizer, ids):
    decoded = tokenizer.decode_batch([[i] for i in ids], skip_special_tokens=False)
    checked = 0
    for i, text in zip(ids, decoded):
        data = vocab.token_bytes[i]
        if data is None:
            continue
        try:
            expected = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a partial UTF-8 character: the decoder shows U+FFFD
        assert text == expected, (i, text, data)
        checked += 1
    return checked


def test_tiny_byte_level_tokens(tiny_vocab, tiny_tokenizer):
    assert tiny_vocab.size == 384
    assert tiny_vocab.eos_ids == {0, 2}  # generation_config.json: eos_token_id [2, 0]
    assert all(tiny_vocab.token_bytes[i] is None for i in (0, 1, 2))  # special tokens
    assert _check_bytes_against_decoder(tiny_vocab, tiny_tokenizer, range(3, 384)) > 240  # 128 lone bytes >= 0x80 are partial
    singles = {b for b in tiny_vocab.token_bytes if b and len(b) == 1}
    assert len(singles) == 256  # the byte-level alphabet: every byte is a token


def test_tiny_roundtrip_of_encodings(tiny_vocab, tiny_tokenizer):
    text = 'Héllo {"a": [1, 2.5]}\n\tünïcödé 日本 😀'
    ids = tiny_tokenizer.encode(text, add_special_tokens=False).ids
    assert tiny_vocab.decode(ids) == text.encode("utf-8")


def test_deepseek_tokens(deepseek_vocab, deepseek_tokenizer):
    vocab = deepseek_vocab
    assert vocab.size == DEEPSEEK_LOGITS and vocab.words == DEEPSEEK_LOGITS // 32
    assert vocab.eos_ids == {1}  # <｜end▁of▁sentence｜>
    assert all(vocab.token_bytes[i] is None for i in range(129_280) if i >= 128_000)
    assert vocab.token_bytes[0] is None  # <｜begin▁of▁sentence｜>
    ids = random.Random(0).sample(range(128_000), 4000)
    assert _check_bytes_against_decoder(vocab, deepseek_tokenizer, ids) > 3500
    text = "Ünïcode 日本語テキスト, numbers 12345 and emoji 😀\n  indented"
    enc = deepseek_tokenizer.encode(text, add_special_tokens=False).ids
    assert vocab.decode(enc) == text.encode("utf-8")


def test_extra_logit_columns_never_match(tiny_dir):
    vocab = Vocabulary.from_tokenizer_json(tiny_dir / "tokenizer.json", vocab_size=400)
    assert vocab.size == 400 and vocab.token_bytes[399] is None and vocab.words == 13
    with pytest.raises(ConstraintError, match="smaller"):
        Vocabulary.from_token_bytes([b"a", b"b"], vocab_size=1)


def test_sorted_arrays_are_consistent(tiny_vocab):
    v = tiny_vocab
    for pos in range(len(v.sorted_ids)):
        data = v.token_bytes[v.sorted_ids[pos]]
        assert bytes(v.sorted_bytes[pos, : v.sorted_lengths[pos]]) == data
    first = v.sorted_bytes[:, 0]
    for b in (0x20, ord("a"), 0xE6):
        lo, hi = v.first_byte_start[b], v.first_byte_start[b + 1]
        assert (first[lo:hi] == b).all() and (first[:lo] < b).all() and (first[hi:] > b).all()


def _sentencepiece_json() -> dict:
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "<0xE6>", "▁hello", "▁", "world", "▁wor", "ld",
              "<|im_end|>", "<ctrl>", "é"]
    return {
        "version": "1.0",
        "added_tokens": [
            {"id": 0, "content": "<unk>", "special": True},
            {"id": 1, "content": "<s>", "special": True},
            {"id": 2, "content": "</s>", "special": True},
            {"id": 10, "content": "<|im_end|>", "special": False},
            {"id": 11, "content": "<ctrl>", "special": False},
            {"id": 13, "content": "    ", "special": False},
        ],
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "vocab": {p: i for i, p in enumerate(pieces)}, "merges": [],
                  "byte_fallback": True, "unk_token": "<unk>"},
    }


def test_sentencepiece_style(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_sentencepiece_json()), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
    vocab = Vocabulary.from_tokenizer_json(path)
    tb = vocab.token_bytes
    assert tb[:3] == [None, None, None]
    assert tb[3] == b"\n" and tb[4] == b"\xe6"
    assert tb[5] == b" hello" and tb[6] == b" " and tb[8] == b" wor" and tb[12] == "é".encode()
    assert tb[10] is None and tb[11] is None  # control-like added tokens
    assert tb[13] == b"    "  # a non-special added token that is plain text stays text
    assert vocab.eos_ids == {2}


def test_eos_by_name_when_no_config(tmp_path):
    data = _sentencepiece_json()
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert Vocabulary.from_tokenizer_json(path).eos_ids == {2, 10}  # </s>, <|im_end|>


def test_eos_bits(tiny_vocab):
    row = np.zeros(tiny_vocab.words, dtype=np.int32)
    from deepinfer.constraints.regular.mask_bits import set_eos_bits

    set_eos_bits(row, tiny_vocab)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    assert set(np.flatnonzero(bits)) == {0, 2}


@pytest.mark.slow
def test_real_smollm2_tokenizer():
    """The default model's real tokenizer (SmolLM2, byte-level BPE, 49,152 tokens)."""
    from tokenizers import Tokenizer

    from deepinfer.constraints import GrammarCompiler, Matcher
    from deepinfer.model.hub import resolve_model

    model_dir = resolve_model(None)  # downloads and converts the default model once
    vocab = Vocabulary.from_pretrained(model_dir)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert vocab.size == 49_152 and {0, 2} <= vocab.eos_ids  # <|endoftext|>, <|im_end|>
    assert _check_bytes_against_decoder(vocab, tokenizer, range(vocab.size)) > 45_000
    text = '{"name": "Ünïcode 日本", "n": -12.5e3}'
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert vocab.decode(ids) == text.encode("utf-8")
    m = Matcher(GrammarCompiler(vocab).compile_regex(r'\{"name": "[^"]*", "n": -?[0-9.e]+\}'))
    assert all(m.accept_token(t) for t in ids) and m.is_completed()


def test_from_tokenizer_objects(tiny_dir, tiny_tokenizer, tiny_vocab):
    direct = Vocabulary.from_tokenizer(tiny_tokenizer)  # a tokenizers.Tokenizer: eos by name
    assert direct.token_bytes == tiny_vocab.token_bytes and direct.eos_ids == {0, 2}
    from deepinfer.tokenizer import Tokenizer

    wrapped = Vocabulary.from_tokenizer(Tokenizer.from_pretrained(tiny_dir), vocab_size=400)
    assert wrapped.size == 400 and wrapped.eos_ids == {0, 2}
