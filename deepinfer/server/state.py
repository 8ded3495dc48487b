"""What every route needs: config, engine, tokenizer, runner, validator, metrics.

Also the request-level helpers shared by routes: strict body parsing (a
malformed or unknown field is a 400), admission (the engine's checks, then the
constraint's compile) and non-streaming collection that aborts the engine
requests when the client disconnects.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import BaseModel, ValidationError

from deepinfer.errors import UserError
from deepinfer.server.body import parse_json_object
from deepinfer.server.config import ServerConfig
from deepinfer.server.errors import APIError, bad_request, from_validation_error
from deepinfer.server.metrics import Metrics
from deepinfer.server.runner import Runner
from deepinfer.server.validation import ConstraintValidator
from deepinfer.types import ChoiceResult, Job, Usage


@dataclass
class ServerState:
    config: ServerConfig
    engine: Any
    tokenizer: Any
    runner: Runner
    validator: ConstraintValidator
    metrics: Metrics


def get_state(request: Request) -> ServerState:
    return request.app.state.deepinfer


def parse_body(raw: bytes, model: type[BaseModel]) -> Any:
    """The body as `model`, or a 400 naming the field (CPU work: callers run it off the loop)."""
    body = parse_json_object(raw)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


# The request field that holds each route's prompt, for the engine's refusals of prompt tokens.
_PROMPT_FIELDS = {"/v1/completions": "prompt", "/v1/responses": "input"}


def check_with_engine(state: ServerState, job: Job, prompt_field: str) -> None:
    """The engine's admission checks (token ids, bias, seed) on every choice, as a 400."""
    try:
        state.runner.check(job)
    except UserError as exc:
        field = getattr(exc, "field", None)
        param = prompt_field if field in (None, "prompt_token_ids") else field
        raise bad_request(f"'{param}': {getattr(exc, 'reason', exc)}", param=param,
                          code="invalid_request_parameter") from None


async def admitted_job(request: Request, body_model: type[BaseModel], make_job) -> tuple[ServerState, Any, Job]:
    """(state, parsed body, admitted job) of a generation request; every refusal is a 4xx before any byte.

    Parsing, rendering, tokenizing and compiling run in worker threads: the event loop only
    moves bytes, so /health and every open stream keep their pace while a large request
    is looked at."""
    state = get_state(request)
    raw = await request.body()
    req = await asyncio.to_thread(parse_body, raw, body_model)
    job = await asyncio.to_thread(make_job, req, state.tokenizer, state.config)
    check_with_engine(state, job, _PROMPT_FIELDS.get(request.url.path, "messages"))
    # a reasoning-aware job's thinking shares max_tokens with the answer: no need can be stated
    await state.validator.validate(job.constraint, None if job.reasoning_aware else job.params.max_tokens)
    return state, req, job


def usage_of(job: Job, results: list[ChoiceResult]) -> Usage:
    return Usage(prompt_tokens=len(job.prompt_token_ids),
                 completion_tokens=sum(len(r.token_ids) for r in results),
                 cached_tokens=max((r.cached_tokens for r in results), default=0))


async def collect(state: ServerState, job: Job, request_id: str, request: Request) -> list[ChoiceResult]:
    """Run a job to completion; if the client goes away, cancel (which aborts the engine requests)."""
    task = asyncio.create_task(state.runner.collect(job, request_id))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.5)
            if done:
                results = task.result()
                break
            if await request.is_disconnected():
                task.cancel()  # aborts the engine requests; nobody is left to read the answer
                raise APIError(499, "the client closed the request")
    finally:
        if not task.done():
            task.cancel()
    usage = usage_of(job, results)
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    return results
