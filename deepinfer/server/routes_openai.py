"""`POST /v1/chat/completions` and `POST /v1/completions`."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from deepinfer.server import format_openai as fmt
from deepinfer.server import sse
from deepinfer.server.errors import APIError
from deepinfer.server.job import ChoiceResult
from deepinfer.server.protocol.openai import ChatCompletionRequest, CompletionRequest
from deepinfer.server.state import admit, collect, get_state, parse_body, usage_of
from deepinfer.server.translate_openai import chat_job, completion_job

router = APIRouter()


@router.post("/v1/chat/completions")
async def chat_completions(request: Request):
    state = get_state(request)
    req = await parse_body(request, ChatCompletionRequest)
    job = chat_job(req, state.tokenizer, state.config)
    await admit(state, job)
    request_id = fmt.new_id("chatcmpl-")
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return sse.response(_chat_events(state, job, request_id, include_usage))
    results = await collect(state, job, request_id, request)
    return JSONResponse(fmt.chat_completion(job, results, state.config.model_name, usage_of(job, results)))


async def _chat_events(state, job, request_id, include_usage):
    chunks = fmt.ChatChunks(job, state.config.model_name)
    results = [ChoiceResult(index=i) for i in range(job.n)]
    try:
        for i in range(job.n):
            yield sse.data(chunks.role(i))
        async for d in state.runner.stream(job, request_id):
            results[d.index].add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            if (d.text or d.logprobs) and (d.kind == "reasoning" or not chunks.buffer_tools):
                yield sse.data(chunks.content(d.index, d.text, d.logprobs, d.kind))
            if d.finish_reason is not None:
                for c in chunks.finish(results[d.index]):
                    yield sse.data(c)
    except APIError as exc:
        yield sse.data(exc.body("openai"))
        return
    usage = usage_of(job, results)
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    if include_usage:
        yield sse.data(chunks.usage(usage))
    yield sse.DONE


@router.post("/v1/completions")
async def completions(request: Request):
    state = get_state(request)
    req = await parse_body(request, CompletionRequest)
    job = completion_job(req, state.tokenizer, state.config)
    await admit(state, job)
    request_id = fmt.new_id("cmpl-")
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return sse.response(_completion_events(state, job, request_id, include_usage, req.echo))
    results = await collect(state, job, request_id, request)
    return JSONResponse(fmt.completion(job, results, state.config.model_name, usage_of(job, results),
                                       req.echo))


async def _completion_events(state, job, request_id, include_usage, echo):
    chunks = fmt.CompletionChunks(job, state.config.model_name)
    results = [ChoiceResult(index=i) for i in range(job.n)]
    offsets = [len(job.prompt_text) if echo else 0] * job.n
    try:
        if echo:
            for i in range(job.n):
                yield sse.data(chunks.chunk(i, job.prompt_text, None, None))
        async for d in state.runner.stream(job, request_id):
            results[d.index].add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            if d.text or d.logprobs or d.finish_reason is not None:
                lps = d.logprobs if job.sampling.logprobs is not None else None
                yield sse.data(chunks.chunk(d.index, d.text, lps, fmt.finish_reason(d.finish_reason)
                                            if d.finish_reason else None, offsets[d.index]))
                offsets[d.index] += len(d.text)
    except APIError as exc:
        yield sse.data(exc.body("openai"))
        return
    usage = usage_of(job, results)
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    if include_usage:
        yield sse.data(chunks.usage(usage))
    yield sse.DONE
