"""The real default model's GGUF (SmolLM2-135M-Instruct Q4_1) read exactly like transformers reads it."""

from __future__ import annotations

import pytest
import torch

from deepinfer.model.gguf import read_gguf
from deepinfer.testing import default_gguf_or_skip
from deepinfer.tokenizer import Tokenizer

CORPUS = [
    "Hello world", " leading space", "numbers 1234567 and 3.14159, -42", "héllo wörld ñ",
    "😀🎉 emoji 👩‍👩‍👧 flags 🇫🇷", "中文字符测试 日本語のテキスト 한국어", "tabs\tand\nnewlines\r\n\n  many   spaces  ",
    "<|im_start|>user\nhi<|im_end|>", "don't can't I'll we've", "def f(x):\n    return x**2  # c\n",
    '{"a": [1, 2, {"b": null}]}', "Ünïcödé ÀÉÎÕÜ", "a" * 300, "x1y22z333 a1b2 0.5e-10", "\u00a0nbsp\u2009",
]


@pytest.fixture(scope="module")
def gguf_path():
    return default_gguf_or_skip()


@pytest.mark.slow  # ~25 s: both sides rebuild a 49k-token tokenizer; tiny GGUFs cover this by default
def test_tokenizer_matches_transformers(gguf_path):
    transformers = pytest.importorskip("transformers")
    ours = Tokenizer.from_pretrained(gguf_path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    for text in CORPUS:
        ids = ours.encode(text)
        assert ids == theirs.encode(text, add_special_tokens=False), text
        assert ours.decode(ids, skip_special_tokens=False) == theirs.decode(ids, skip_special_tokens=False)
    messages = [{"role": "user", "content": "Name three prime numbers."}]
    assert ours.apply_chat_template(messages) == theirs.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True)
    assert ours.eos_token_id == theirs.eos_token_id


@pytest.mark.slow
def test_tensors_match_transformers(gguf_path):
    transformers = pytest.importorskip("transformers")
    ours = read_gguf(gguf_path)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32)
    assert ours.config["tie_word_embeddings"] is True and theirs.config.tie_word_embeddings
    state = theirs.state_dict()
    assert set(ours.state_dict) == set(state) - {"lm_head.weight"}  # tied to the embedding
    for name, tensor in ours.state_dict.items():
        assert torch.equal(tensor, state[name]), name
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size", "max_position_embeddings"):
        assert ours.config[key] == getattr(theirs.config, key), key
    rope = getattr(theirs.config, "rope_parameters", None) or {"rope_theta": theirs.config.rope_theta}
    assert ours.config["rope_theta"] == rope["rope_theta"]
