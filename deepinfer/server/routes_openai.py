"""`POST /v1/chat/completions` and `POST /v1/completions`.

Both routes share one handler (`_serve`): parse, translate into a `Job`,
admit (compile the constraint: a 400 before any byte), then either collect a
JSON body or stream `data:` chunks ending in `[DONE]`. Only the translation,
the body and the per-delta chunks differ, and those come from a `_Route`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from deepinfer.server import format_openai as fmt
from deepinfer.server import sse
from deepinfer.server.errors import APIError
from deepinfer.server.protocol.openai import ChatCompletionRequest, CompletionRequest
from deepinfer.server.state import ServerState, admitted_job, collect, usage_of
from deepinfer.server.translate_openai import chat_job, completion_job
from deepinfer.types import ChoiceDelta, ChoiceResult, Job

router = APIRouter()


@dataclass(frozen=True)
class _Route:
    """What differs between the two routes."""

    body_model: type
    make_job: Callable[[Any, Any, Any], Job]
    id_prefix: str
    body: Callable[[Any, Job, list[ChoiceResult], str], dict]  # (req, job, results, model) -> JSON
    chunks: Callable[[Any, Job, str], "_Chunks"]  # (req, job, model) -> per-request chunk builder


class _Chunks:
    """Stream chunks of one request: `start()` once, `delta()` per engine delta, `usage()` at the end."""

    def start(self) -> list[dict]:
        return []

    def delta(self, d: ChoiceDelta, result: ChoiceResult) -> list[dict]:
        raise NotImplementedError

    def usage(self, usage) -> dict:
        raise NotImplementedError


class _ChatChunks(_Chunks):
    def __init__(self, req: ChatCompletionRequest, job: Job, model: str) -> None:
        self.job, self.out = job, fmt.ChatChunks(job, model)

    def start(self) -> list[dict]:
        return [self.out.role(i) for i in range(self.job.n)]

    def delta(self, d: ChoiceDelta, result: ChoiceResult) -> list[dict]:
        chunks = []
        if d.kind != "reasoning" and self.out.buffer_tools:  # text only while it cannot be a call
            chunks += self.out.gated(d.index, d.text, d.logprobs)
        elif d.text or d.logprobs:
            chunks.append(self.out.content(d.index, d.text, d.logprobs, d.kind))
        if d.finish_reason is not None:
            chunks += self.out.finish(result)
        return chunks

    def usage(self, usage) -> dict:
        return self.out.usage(usage)


class _CompletionChunks(_Chunks):
    def __init__(self, req: CompletionRequest, job: Job, model: str) -> None:
        self.job, self.echo, self.out = job, req.echo, fmt.CompletionChunks(job, model)
        self.offsets = [len(job.prompt_text) if req.echo else 0] * job.n

    def start(self) -> list[dict]:
        return [self.out.chunk(i, self.job.prompt_text, None, None) for i in range(self.job.n)] if self.echo else []

    def delta(self, d: ChoiceDelta, result: ChoiceResult) -> list[dict]:
        if not (d.text or d.logprobs or d.finish_reason is not None):
            return []
        lps = d.logprobs if self.job.params.logprobs is not None else None
        reason = fmt.finish_reason(d.finish_reason) if d.finish_reason else None
        chunk = self.out.chunk(d.index, d.text, lps, reason, self.offsets[d.index])
        self.offsets[d.index] += len(d.text)
        return [chunk]

    def usage(self, usage) -> dict:
        return self.out.usage(usage)


CHAT = _Route(ChatCompletionRequest, chat_job, "chatcmpl-",
              lambda req, job, results, model: fmt.chat_completion(job, results, model, usage_of(job, results)),
              _ChatChunks)
COMPLETION = _Route(CompletionRequest, completion_job, "cmpl-",
                    lambda req, job, results, model: fmt.completion(job, results, model, usage_of(job, results),
                                                                    req.echo),
                    _CompletionChunks)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request):
    return await _serve(request, CHAT)


@router.post("/v1/completions")
async def completions(request: Request):
    return await _serve(request, COMPLETION)


async def _serve(request: Request, route: _Route):
    state, req, job = await admitted_job(request, route.body_model, route.make_job)
    request_id = fmt.new_id(route.id_prefix)
    model = state.config.model_name
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return sse.response(_events(state, job, request_id, include_usage, route.chunks(req, job, model)))
    results = await collect(state, job, request_id, request)
    return JSONResponse(route.body(req, job, results, model))


async def _events(state: ServerState, job: Job, request_id: str, include_usage: bool,
                  chunks: _Chunks) -> AsyncIterator[str]:
    results = [ChoiceResult(index=i) for i in range(job.n)]
    try:
        for c in chunks.start():
            yield sse.data(c)
        async for d in state.runner.stream(job, request_id):
            results[d.index].add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            for c in chunks.delta(d, results[d.index]):
                yield sse.data(c)
    except APIError as exc:  # the status line has gone out: the error travels as an event
        yield sse.data(exc.body("openai"))
        return
    usage = usage_of(job, results)
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    if include_usage:
        yield sse.data(chunks.usage(usage))
    yield sse.DONE
