"""Incremental detokenization: pushes concatenate to decode(), never a broken character."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from deepinfer.tokenizer import Tokenizer

# Unicode text weighted towards what splits across byte-level tokens: emoji (4 bytes, ZWJ
# sequences), CJK (3 bytes), accented Latin (2 bytes), plus ASCII and whitespace.
_PIECES = st.sampled_from(["a", "b", " ", "\n", "é", "ñ", "ü", "世", "界", "日本", "한", "😀", "🎉",
                           "👩‍👩‍👧", "🇫🇷", "\u200b", "1", "23", "{", "\"", "<|im_end|>", "\ufffd", "ʼ"])
TEXTS = st.one_of(st.lists(_PIECES, max_size=30).map("".join), st.text(max_size=40))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_stream(tokenizer: Tokenizer, text: str, skip_special_tokens: bool = True) -> None:
    ids = tokenizer.encode(text)
    detok = tokenizer.detokenizer(skip_special_tokens=skip_special_tokens)
    pushes = [detok.push(i) for i in ids]
    tail = detok.flush()
    decoded = tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
    assert "".join(pushes) + tail == decoded
    # The text may hold U+FFFD itself, or characters whose bytes the vocabulary lacks (BPE
    # without byte fallback drops them, e.g. SmolLM2 has no token for byte 0xF1).
    if "\ufffd" not in decoded:
        assert not any("\ufffd" in piece for piece in pushes)


@pytest.fixture(scope="module")
def tokenizers(tiny_dir, deepseek_dir, byte_fallback_dir):
    return {"tiny": Tokenizer.from_pretrained(tiny_dir), "deepseek": Tokenizer.from_pretrained(deepseek_dir),
            "byte_fallback": Tokenizer.from_pretrained(byte_fallback_dir)}


@pytest.mark.parametrize("name", ["tiny", "deepseek", "byte_fallback"])
def test_stream_equals_decode(tokenizers, name):
    tokenizer = tokenizers[name]

    @SETTINGS
    @given(text=TEXTS, skip=st.booleans())
    def check(text, skip):
        check_stream(tokenizer, text, skip)

    check()


def test_stream_equals_decode_smollm2(smollm2_dir):
    tokenizer = Tokenizer.from_pretrained(smollm2_dir)

    @SETTINGS
    @given(text=TEXTS)
    def check(text):
        check_stream(tokenizer, text)

    check()


def test_multibyte_character_is_held_until_complete(tokenizers):
    tokenizer = tokenizers["byte_fallback"]
    ids = tokenizer.encode("😀")  # four <0xNN> tokens: F0 9F 98 80
    assert len(ids) == 5 and ids[0] == tokenizer.token_to_id("▁")
    detok = tokenizer.detokenizer()
    assert [detok.push(i) for i in ids] == ["", "", "", "", "😀"]  # the leading ▁ is stripped at start
    assert detok.flush() == ""


def test_incomplete_tail_is_released_by_flush(tokenizers):
    tokenizer = tokenizers["deepseek"]
    ids = tokenizer.encode("ok 😀")
    detok = tokenizer.detokenizer()
    emitted = "".join(detok.push(i) for i in ids[:-1])
    assert "\ufffd" not in emitted
    assert emitted + detok.flush() == tokenizer.decode(ids[:-1])
