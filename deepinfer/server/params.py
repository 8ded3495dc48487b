"""Translate a `Job` into the engine's `SamplingParams`, one per choice.

The only place that knows the engine's parameter names. A field the client
set but the engine cannot honour is a 400, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import inspect

from deepinfer.errors import UserError
from deepinfer.server.errors import bad_request
from deepinfer.server.job import Job


def _accepted_fields(cls) -> set[str]:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return set(inspect.signature(cls).parameters)


def _constraint_kwargs(job: Job) -> dict:
    spec = job.constraint
    if spec is None:
        return {}
    if spec.kind == "json_schema":
        options = {} if job.json_whitespace is None else {"json_whitespace": job.json_whitespace}
        return {"json_schema": spec.value, **options}
    if spec.kind == "regex":
        return {"regex": spec.value}
    if spec.kind == "ir":
        return {"grammar_ir": spec.value}
    return {"grammar": spec.value, "grammar_syntax": spec.syntax}


def choice_seed(seed: int | None, index: int) -> int | None:
    """Choice i of a seeded request uses seed + i: reproducible, and the n choices differ."""
    return None if seed is None else seed + index


def sampling_params(job: Job, index: int, params_cls=None, *, phase: str = "answer",
                    max_tokens: int | None = None, stop_token_ids: list[int] | None = None):
    """The engine's SamplingParams for choice `index` of `job`.

    phase "answer": the job's own stops and constraint; phase "reasoning": the
    free-text thinking before the constraint, ended by the reasoning end tag
    (`stop_token_ids` when the tag is one token, else a stop string).
    """
    if params_cls is None:
        from deepinfer.types import SamplingParams as params_cls
    s = job.sampling
    reasoning = phase == "reasoning"
    stop = ([] if stop_token_ids else [job.reasoning_end]) if reasoning else list(s.stop)
    wanted = {
        "max_tokens": max_tokens if max_tokens is not None else s.max_tokens,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "top_k": s.top_k if s.top_k not in (-1, 0) else None,
        "min_p": s.min_p,
        "seed": choice_seed(s.seed, index),
        "stop": stop or None,
        "stop_token_ids": stop_token_ids or None,
        "presence_penalty": s.presence_penalty,
        "frequency_penalty": s.frequency_penalty,
        "repetition_penalty": s.repetition_penalty,
        "logit_bias": s.logit_bias,
        "logprobs": s.logprobs,
    }
    kwargs = {k: v for k, v in wanted.items() if v is not None}
    if not reasoning:
        kwargs.update(_constraint_kwargs(job))
    accepted = _accepted_fields(params_cls)
    missing = sorted(k for k in kwargs if k not in accepted)
    if missing:
        raise bad_request(f"this engine does not support {', '.join(missing)}", param=missing[0],
                          code="unsupported_parameter")
    try:
        return params_cls(**kwargs)
    except UserError as exc:
        raise bad_request(str(exc), code="invalid_sampling_parameter") from None
