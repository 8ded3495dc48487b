"""The simple single-sequence loop behind `deepinfer generate`: stopping, streaming, errors."""

from __future__ import annotations

import pytest
import torch

from deepinfer.errors import UserError
from deepinfer.generation import generate, generate_tokens, sample_next
from deepinfer.model import load_model
from deepinfer.testing import make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer


@pytest.fixture
def tiny(tmp_path_factory):
    directory = make_tiny_model_dir(tmp_path_factory.mktemp("loop"))
    return load_model(directory), Tokenizer.from_pretrained(directory)


def test_streamed_text_is_the_result_and_length_stops(tiny):
    model, tokenizer = tiny
    prompt = tokenizer.encode(tokenizer.apply_chat_template([{"role": "user", "content": "hi"}]))
    pieces = []
    result = generate(model, tokenizer, prompt, max_tokens=10, on_text=pieces.append)
    assert "".join(pieces) == result.text == tokenizer.decode(result.token_ids)
    assert len(result.token_ids) == 10 and result.finish_reason == "length"


def test_stops_at_any_eos_id_and_leaves_it_out_of_the_text(tiny):
    model, tokenizer = tiny
    prompt = tokenizer.encode("The quick brown fox")
    greedy = list(generate_tokens(model, prompt, max_tokens=8, eos_token_ids=frozenset()))
    # Declare the first greedy token not seen before (after the first) an end-of-sequence id:
    # generation must stop right there.
    stop = next((k for k in range(1, len(greedy)) if greedy[k] not in greedy[:k]), 0)
    eos = frozenset({greedy[stop]})
    assert list(generate_tokens(model, prompt, max_tokens=8, eos_token_ids=eos)) == greedy[:stop + 1]
    tokenizer.eos_token_ids = eos
    result = generate(model, tokenizer, prompt, max_tokens=8)
    assert result.finish_reason == "stop" and result.stop_token_id == greedy[stop]
    assert result.text == tokenizer.decode(greedy[:stop])


def test_seeded_sampling_is_reproducible():
    logits = torch.randn(50)
    draws = [sample_next(logits, 1.0, torch.Generator().manual_seed(3)) for _ in range(2)]
    assert draws[0] == draws[1]
    assert sample_next(logits, 0.0, None) == int(torch.argmax(logits))


def test_bad_inputs_are_user_errors(tiny):
    model, _ = tiny
    with pytest.raises(UserError, match="empty"):
        list(generate_tokens(model, [], max_tokens=2, eos_token_ids=frozenset()))
    with pytest.raises(UserError, match="context"):
        list(generate_tokens(model, [5] * model.config.max_position_embeddings, max_tokens=2,
                             eos_token_ids=frozenset()))
