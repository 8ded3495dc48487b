"""`POST /v1/messages`: Anthropic Message objects and their named stream events."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from deepinfer.server import sse
from deepinfer.server.errors import APIError
from deepinfer.server.format_openai import new_id, raise_if_failed, resolve_tool_call
from deepinfer.server.job import ChoiceResult, Job, Usage
from deepinfer.server.protocol.anthropic import MessagesRequest
from deepinfer.server.state import collect, get_state, parse_body, usage_of
from deepinfer.server.translate_anthropic import messages_job

router = APIRouter()


def stop_reason(job: Job, result: ChoiceResult) -> tuple[str, str | None]:
    """(stop_reason, stop_sequence) in Anthropic's vocabulary."""
    if result.tool_call is not None:
        return "tool_use", None
    if result.finish_reason == "length":
        return "max_tokens", None
    matched = getattr(result, "stop_sequence", None)
    return ("stop_sequence", matched) if matched else ("end_turn", None)


def content_blocks(job: Job, result: ChoiceResult) -> list[dict]:
    resolve_tool_call(job, result)
    if result.tool_call is not None:
        name, args = result.tool_call
        return [{"type": "tool_use", "id": new_id("toolu_"), "name": name, "input": args}]
    return [{"type": "text", "text": result.text}]


def usage_json(usage: Usage) -> dict:
    return {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cached_tokens}


def message_object(msg_id: str, model: str, content: list[dict], reason: str | None,
                   sequence: str | None, usage: Usage) -> dict:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": reason, "stop_sequence": sequence, "usage": usage_json(usage)}


@router.post("/v1/messages")
async def messages(request: Request):
    state = get_state(request)
    req = await parse_body(request, MessagesRequest)
    job = messages_job(req, state.tokenizer, state.config)
    await state.validator.validate(job.constraint)
    msg_id = new_id("msg_")
    if req.stream:
        return StreamingResponse(_events(state, job, msg_id), media_type="text/event-stream")
    results = await collect(state, job, msg_id, request)
    raise_if_failed(results)
    blocks = content_blocks(job, results[0])
    reason, sequence = stop_reason(job, results[0])
    return JSONResponse(message_object(msg_id, state.config.model_name, blocks, reason, sequence,
                                       usage_of(job, results)))


async def _events(state, job: Job, msg_id: str):
    model = state.config.model_name
    start_usage = Usage(prompt_tokens=len(job.prompt_token_ids), completion_tokens=0)
    yield sse.event("message_start", {"type": "message_start",
                                      "message": message_object(msg_id, model, [], None, None, start_usage)})
    text_open = job.tool_mode == "none"  # tool-capable output is buffered until it is known
    if text_open:
        yield sse.event("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}})
    yield sse.event("ping", {"type": "ping"})
    result = ChoiceResult(index=0)
    try:
        async for d in state.runner.stream(job, msg_id):
            result.add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            if text_open and d.text:
                yield sse.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                        "delta": {"type": "text_delta", "text": d.text}})
        blocks = content_blocks(job, result)
    except APIError as exc:
        yield sse.event("error", exc.body("anthropic"))
        return
    if not text_open:
        block = blocks[0]
        if block["type"] == "tool_use":
            yield sse.event("content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {**block, "input": {}}})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}
        else:
            yield sse.event("content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": "text", "text": ""}})
            delta = {"type": "text_delta", "text": block["text"]}
        yield sse.event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield sse.event("content_block_stop", {"type": "content_block_stop", "index": 0})
    usage = usage_of(job, [result])
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    reason, sequence = stop_reason(job, result)
    yield sse.event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": reason, "stop_sequence": sequence},
                                      "usage": {"output_tokens": usage.completion_tokens}})
    yield sse.event("message_stop", {"type": "message_stop"})
