"""Logits rows -> tokens: bias, penalties, mask, temperature, top-k/p, min-p, Gumbel-max.

Every step here is a per-row operation, so a row's result depends only on its
own logits and parameters (batch invariance). Randomness comes from
`noise.gumbel(seed, position)`; temperature 0 is argmax. Knows nothing about
models, caches or how the constraint bitmask was computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from deepinfer.sampling.noise import gumbel
from deepinfer.types import SamplingParams, TokenLogprob


@dataclass
class SamplingRow:
    """What the sampler needs to know about one sequence this step."""

    params: SamplingParams
    seed: int
    position: int              # index of the token being sampled within the sequence
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    banned: list[int] | None = None  # ids never allowed now (eos before min_tokens)


@dataclass
class SampleResult:
    token_ids: list[int]
    logprobs: list[TokenLogprob | None]


def apply_penalties(logits: torch.Tensor, rows: list[SamplingRow]) -> None:
    """Logit bias, repetition/presence/frequency penalties and bans, in place. logits: [B, V]."""
    vocab = logits.shape[1]
    for i, row in enumerate(rows):
        p = row.params
        if p.logit_bias:
            ids = torch.tensor([t for t in p.logit_bias if 0 <= t < vocab], dtype=torch.long)
            vals = torch.tensor([p.logit_bias[t] for t in p.logit_bias if 0 <= t < vocab])
            logits[i].index_add_(0, ids, vals)
        if p.repetition_penalty != 1.0:
            seen = torch.tensor(sorted(set(row.prompt_token_ids) | set(row.output_token_ids)), dtype=torch.long)
            if seen.numel():
                vals = logits[i, seen]
                logits[i, seen] = torch.where(vals > 0, vals / p.repetition_penalty, vals * p.repetition_penalty)
        if (p.presence_penalty or p.frequency_penalty) and row.output_token_ids:
            counts = torch.bincount(torch.tensor(row.output_token_ids, dtype=torch.long), minlength=vocab)[:vocab]
            logits[i] -= p.frequency_penalty * counts + p.presence_penalty * (counts > 0)
        if row.banned:
            logits[i, torch.tensor(row.banned, dtype=torch.long)] = -torch.inf


def truncate(logits: torch.Tensor, p: SamplingParams) -> torch.Tensor:
    """Top-k, top-p and min-p filtering of one row of temperature-scaled logits [V]."""
    if p.top_k > 0 and p.top_k < logits.shape[0]:
        kth = torch.topk(logits, p.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, -torch.inf)
    if p.min_p > 0:
        probs = torch.softmax(logits, dim=-1)
        logits = logits.masked_fill(probs < p.min_p * probs.max(), -torch.inf)
    if p.top_p < 1:
        sorted_logits, order = torch.sort(logits, descending=True)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        drop = (cum - torch.softmax(sorted_logits, dim=-1)) >= p.top_p  # keep the token crossing top_p
        logits = logits.clone()
        logits[order[drop]] = -torch.inf
    return logits


def sample(logits: torch.Tensor, rows: list[SamplingRow]) -> SampleResult:
    """Pick one token per row. logits: float32 [B, V], already masked by constraints."""
    logprob_rows = torch.log_softmax(logits, dim=-1) if any(r.params.logprobs is not None for r in rows) else None
    tokens: list[int] = []
    for i, row in enumerate(rows):
        p = row.params
        if p.greedy:
            tokens.append(int(torch.argmax(logits[i])))
            continue
        scaled = truncate(logits[i] / p.temperature, p)
        noise = gumbel(torch.tensor([row.seed]), torch.tensor([row.position]), logits.shape[1])[0]
        tokens.append(int(torch.argmax(scaled.double() + noise)))
    logprobs: list[TokenLogprob | None] = []
    for i, row in enumerate(rows):
        if row.params.logprobs is None:
            logprobs.append(None)
            continue
        lp = logprob_rows[i]
        top = {}
        if row.params.logprobs > 0:
            values, ids = torch.topk(lp, row.params.logprobs)
            # Tokens a constraint masked out (-inf) are no alternatives; fewer may be left than asked
            # (and -inf is not JSON: the server would write -Infinity).
            top = {int(t): float(v) for t, v in zip(ids.tolist(), values.tolist()) if v != float("-inf")}
        logprobs.append(TokenLogprob(tokens[i], float(lp[tokens[i]]), top))
    return SampleResult(tokens, logprobs)
