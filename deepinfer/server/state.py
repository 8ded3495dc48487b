"""What every route needs: config, engine, tokenizer, runner, validator, metrics.

Also the request-level helpers shared by routes: strict body parsing (a
malformed or unknown field is a 400) and non-streaming collection that aborts
the engine requests when the client disconnects.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import BaseModel, ValidationError

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


async def parse_body(request: Request, model: type[BaseModel]) -> Any:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", code="invalid_json")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


async def admit(state: ServerState, job: Job) -> None:
    """Everything that can refuse a request, before its response starts: the constraint
    compiles, and the engine accepts the sampling parameters."""
    await state.validator.validate(job.constraint)
    state.runner.check(job)


async def admitted_job(request: Request, body_model: type[BaseModel], make_job) -> tuple[ServerState, Any, Job]:
    """(state, parsed body, admitted job) of a generation request; every refusal is a 4xx before any byte."""
    state = get_state(request)
    req = await parse_body(request, body_model)
    job = make_job(req, state.tokenizer, state.config)
    await admit(state, job)
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
