"""The engine's `SamplingParams` of a job: as the client set them, then per choice and phase.

`client_params` builds a request's parameters from the fields the client set (None: the
engine's default); a value the engine refuses is a 400 naming it, never dropped silently.
`choice_params` derives what one choice runs with: n=1, seed + i, and either the answer's
stops and constraint or, in the reasoning phase, free text until the reasoning end tag.
"""

from __future__ import annotations

import dataclasses

from deepinfer.errors import UserError
from deepinfer.server.errors import bad_request
from deepinfer.types import ConstraintSpec, Job, SamplingParams


def client_params(**fields) -> SamplingParams:
    """SamplingParams of the fields the client set; a refused value is a 400."""
    try:
        return SamplingParams(**{k: v for k, v in fields.items() if v is not None})
    except UserError as exc:
        raise bad_request(str(exc), code="invalid_sampling_parameter") from None


def constraint_fields(spec: ConstraintSpec | None) -> dict:
    """The SamplingParams fields that carry a constraint to the engine."""
    if spec is None:
        return {}
    if spec.kind == "json_schema":
        return {"json_schema": spec.value}
    if spec.kind == "regex":
        return {"regex": spec.value}
    if spec.kind == "ir":
        return {"grammar_ir": spec.value}
    return {"grammar": spec.value, "grammar_syntax": spec.syntax}


def choice_seed(seed: int | None, index: int) -> int | None:
    """Choice i of a seeded request uses seed + i: reproducible, and the n choices differ."""
    return None if seed is None else seed + index


def choice_params(job: Job, index: int, *, phase: str = "answer", max_tokens: int | None = None,
                  stop_token_ids: list[int] | None = None) -> SamplingParams:
    """The engine's SamplingParams for choice `index` of `job`.

    phase "answer": the job's own stops and constraint; phase "reasoning": the
    free-text thinking before the constraint, ended by the reasoning end tag
    (`stop_token_ids` when the tag is one token, else a stop string).
    """
    changes: dict = {"n": 1, "seed": choice_seed(job.params.seed, index)}
    if max_tokens is not None:
        changes["max_tokens"] = max_tokens
    if phase == "reasoning":
        changes["stop"] = [] if stop_token_ids else [job.reasoning_end]
        changes["stop_token_ids"] = list(stop_token_ids or [])
    else:
        changes.update(constraint_fields(job.constraint))
    try:
        return dataclasses.replace(job.params, **changes)
    except UserError as exc:
        raise bad_request(str(exc), code="invalid_sampling_parameter") from None
