"""Tokenizer: encode/decode, special tokens and eos ids agree with transformers on the same files."""

from __future__ import annotations

import json
import shutil

import pytest

from deepinfer.errors import ModelLoadError
from deepinfer.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")

CORPUS = [
    "Hello world", " leading space", "numbers 1234567 and 3.14159, -42", "héllo wörld ñ",
    "😀🎉 emoji 👩‍👩‍👧 flags 🇫🇷", "中文字符测试 日本語のテキスト 한국어", "tabs\tand\nnewlines\r\n\n  many   spaces  ",
    "<|im_start|>user\nhi<|im_end|>", "don't can't I'll we've", "def f(x):\n    return x**2  # c\n",
    '{"a": [1, 2, {"b": null}], "c": "\\u00e9"}', "Ünïcödé ÀÉÎÕÜ", "a" * 200, "   ", "",
    "\u00a0nbsp\u2009thin\u200bzero", "x1y22z333 a1b2", "<｜begin▁of▁sentence｜>text<｜end▁of▁sentence｜>",
]


def _check_same_as_transformers(directory):
    ours = Tokenizer.from_pretrained(directory)
    reference = transformers.AutoTokenizer.from_pretrained(str(directory))
    for text in CORPUS:
        ids = ours.encode(text)
        assert ids == reference.encode(text, add_special_tokens=False), text
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == reference.decode(
                ids, skip_special_tokens=skip), (text, skip)
    assert ours.encode("hello", add_special_tokens=True) == reference.encode("hello")
    assert ours.vocab_size == len(reference)
    return ours, reference


def test_tiny_tokenizer_matches_transformers(tiny_dir):
    ours, reference = _check_same_as_transformers(tiny_dir)
    assert ours.eos_token_id == reference.eos_token_id == 2
    assert ours.special_token_ids == {0, 1, 2}


def test_deepseek_v4_tokenizer_matches_transformers(deepseek_dir):
    ours, reference = _check_same_as_transformers(deepseek_dir)
    assert ours.bos_token_id == reference.bos_token_id
    assert ours.eos_token_id == reference.eos_token_id
    assert ours.eos_token_ids == {reference.eos_token_id}


def test_smollm2_tokenizer_matches_transformers(smollm2_dir):
    ours, reference = _check_same_as_transformers(smollm2_dir)
    # <|im_end|> ends a chat turn, <|endoftext|> ends a document: both stop generation.
    assert ours.eos_token_ids == {ours.token_to_id("<|im_end|>"), ours.token_to_id("<|endoftext|>")}
    assert ours.eos_token_id == reference.eos_token_id == ours.token_to_id("<|im_end|>")


def test_byte_fallback_tokenizer_matches_transformers(byte_fallback_dir):
    ours, _ = _check_same_as_transformers(byte_fallback_dir)
    assert ours.encode("x", add_special_tokens=True).count(ours.bos_token_id) == 1


def test_add_bos_token_is_honoured_without_a_post_processor(tmp_path, tiny_dir):
    # GGUF-derived tokenizers say add_bos_token in tokenizer_config only (llama.cpp semantics).
    shutil.copytree(tiny_dir, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "tokenizer_config.json").read_text())
    config |= {"add_bos_token": True, "bos_token": "<|im_start|>"}
    (tmp_path / "m" / "tokenizer_config.json").write_text(json.dumps(config))
    tok = Tokenizer.from_pretrained(tmp_path / "m")
    assert tok.encode("hi", add_special_tokens=True) == [1, *tok.encode("hi")]
    assert tok.encode("hi", add_special_tokens=False) == tok.encode("hi")


def test_eos_ids_are_the_union_of_config_files(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    directory = tmp_path / "m"
    (directory / "config.json").write_text(json.dumps({"eos_token_id": 5}))
    (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": [7, 2]}))
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["eos_token"] = {"__type": "AddedToken", "content": "<|endoftext|>", "special": True}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    tok = Tokenizer.from_pretrained(directory)
    assert tok.eos_token_id == 0
    assert tok.eos_token_ids == {0, 2, 5, 7}


def test_special_tokens_map_fills_in_missing_tokenizer_config(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    directory = tmp_path / "m"
    config = json.loads((directory / "tokenizer_config.json").read_text())
    del config["eos_token"]
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    (directory / "special_tokens_map.json").write_text(json.dumps({"eos_token": {"content": "<|im_end|>"}}))
    (directory / "generation_config.json").unlink()
    (directory / "config.json").write_text("{}")
    assert Tokenizer.from_pretrained(directory).eos_token_ids == {2}


def test_missing_tokenizer_json_names_the_directory(tmp_path):
    with pytest.raises(ModelLoadError, match="has no tokenizer.json") as info:
        Tokenizer.from_pretrained(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_corrupt_tokenizer_json_is_a_model_load_error(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    (tmp_path / "m" / "tokenizer.json").write_text('{"model": ')
    with pytest.raises(ModelLoadError, match="cannot be parsed"):
        Tokenizer.from_pretrained(tmp_path / "m")


def test_corrupt_tokenizer_config_names_the_file(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    (tmp_path / "m" / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="tokenizer_config.json is not valid JSON"):
        Tokenizer.from_pretrained(tmp_path / "m")


def test_missing_path(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        Tokenizer.from_pretrained(tmp_path / "nope")
