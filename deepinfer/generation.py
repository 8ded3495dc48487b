"""A minimal single-sequence generation loop (greedy or seeded temperature sampling).

Used by `deepinfer generate` until the batched engine takes over: prefill the
prompt into a DenseKVCache, then decode one token at a time, streaming text
through the tokenizer's IncrementalDetokenizer, until an end-of-sequence id or
max_tokens. Sampling uses its own torch.Generator so a seed reproduces a run.
Knows nothing about batching, paging or constraints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from deepinfer.errors import UserError
from deepinfer.model.kv import DenseKVCache


@dataclass
class GenerationResult:
    token_ids: list[int]
    text: str
    finish_reason: str  # "stop" (eos) or "length" (max_tokens)
    prompt_tokens: int
    prefill_seconds: float
    decode_seconds: float
    stop_token_id: int | None = None

    @property
    def decode_tokens_per_second(self) -> float:
        steps = max(len(self.token_ids) - 1, 0)  # the first token comes from prefill
        return steps / self.decode_seconds if self.decode_seconds > 0 else 0.0


def sample_next(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> int:
    """logits: float32 [vocab] -> token id. temperature 0 = argmax."""
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def generate_tokens(model, prompt_ids: list[int], *, max_tokens: int, eos_token_ids: frozenset[int],
                    temperature: float = 0.0, seed: int | None = None) -> Iterator[int]:
    """Yield generated token ids one by one (the eos id, if reached, is yielded last)."""
    if not prompt_ids:
        raise UserError("the prompt is empty after tokenization; give a non-empty prompt.")
    if temperature < 0:
        raise UserError(f"temperature must be >= 0 (0 = greedy), got {temperature}.")
    limit = getattr(model.config, "max_position_embeddings", None)
    if limit is not None and len(prompt_ids) >= limit:
        raise UserError(f"the prompt has {len(prompt_ids)} tokens, more than the model's context of "
                        f"{limit} tokens; shorten it.")
    generator = torch.Generator().manual_seed(seed if seed is not None else torch.seed())
    cache = DenseKVCache(model.config.num_layers)
    ids = torch.tensor(prompt_ids, dtype=torch.long)  # [T]
    positions = torch.arange(len(prompt_ids))  # [T]
    last = torch.tensor([len(prompt_ids) - 1])
    for step in range(max_tokens):
        logits = model.forward(ids, positions, cache, logits_indices=last)[0]  # [vocab]
        token = sample_next(logits, temperature, generator)
        yield token
        if token in eos_token_ids:
            return
        position = len(prompt_ids) + step
        if limit is not None and position + 1 >= limit:
            return
        ids, positions, last = torch.tensor([token]), torch.tensor([position]), torch.tensor([0])


def generate(model, tokenizer, prompt_ids: list[int], *, max_tokens: int = 256, temperature: float = 0.0,
             seed: int | None = None, on_text: Callable[[str], None] | None = None) -> GenerationResult:
    """Run generate_tokens, streaming decoded text to on_text; eos is not part of the text."""
    detok = tokenizer.detokenizer()
    tokens: list[int] = []
    pieces: list[str] = []
    stop: int | None = None
    start = time.perf_counter()
    first_at = start
    for token in generate_tokens(model, prompt_ids, max_tokens=max_tokens,
                                 eos_token_ids=tokenizer.eos_token_ids, temperature=temperature, seed=seed):
        if not tokens:
            first_at = time.perf_counter()
        tokens.append(token)
        if token in tokenizer.eos_token_ids:
            stop = token
            break
        text = detok.push(token)
        if text:
            pieces.append(text)
            if on_text:
                on_text(text)
    tail = detok.flush()
    if tail:
        pieces.append(tail)
        if on_text:
            on_text(tail)
    end = time.perf_counter()
    return GenerationResult(token_ids=tokens, text="".join(pieces),
                            finish_reason="stop" if stop is not None else "length",
                            prompt_tokens=len(prompt_ids), prefill_seconds=first_at - start,
                            decode_seconds=end - first_at, stop_token_id=stop)
