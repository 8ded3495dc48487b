"""`POST /v1/messages`: Anthropic Message objects and their named stream events."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from deepinfer.server import sse
from deepinfer.server.errors import APIError
from deepinfer.server.format_openai import new_id, raise_if_failed
from deepinfer.server.protocol.anthropic import MessagesRequest
from deepinfer.server.state import admitted_job, collect, usage_of
from deepinfer.server.tool_calls import TextGate, call_format, resolve_tool_calls
from deepinfer.server.translate_anthropic import messages_job
from deepinfer.types import ChoiceResult, Job, Usage

router = APIRouter()


def stop_reason(job: Job, result: ChoiceResult) -> tuple[str, str | None]:
    """(stop_reason, stop_sequence) in Anthropic's vocabulary."""
    if result.finish_reason == "length":
        return "max_tokens", None
    if result.tool_calls:
        return "tool_use", None
    matched = getattr(result, "stop_sequence", None)
    return ("stop_sequence", matched) if matched else ("end_turn", None)


def content_blocks(job: Job, result: ChoiceResult) -> list[dict]:
    """A thinking block if any, then the text block, then one tool_use block per call.

    A text block is always there when there are no calls (possibly empty)."""
    resolve_tool_calls(job, result)
    thinking = ([{"type": "thinking", "thinking": result.reasoning, "signature": ""}]
                if result.reasoning else [])
    text = [{"type": "text", "text": result.text}] if result.text or not result.tool_calls else []
    calls = [{"type": "tool_use", "id": new_id("toolu_"), "name": name, "input": args}
             for name, args in result.tool_calls]
    return thinking + text + calls


def usage_json(usage: Usage) -> dict:
    return {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cached_tokens}


def message_object(msg_id: str, model: str, content: list[dict], reason: str | None,
                   sequence: str | None, usage: Usage) -> dict:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": reason, "stop_sequence": sequence, "usage": usage_json(usage)}


@router.post("/v1/messages")
async def messages(request: Request):
    state, req, job = await admitted_job(request, MessagesRequest, messages_job)
    msg_id = new_id("msg_")
    if req.stream:
        return sse.response(_events(state, job, msg_id))
    results = await collect(state, job, msg_id, request)
    raise_if_failed(results)
    blocks = content_blocks(job, results[0])
    reason, sequence = stop_reason(job, results[0])
    return JSONResponse(message_object(msg_id, state.config.model_name, blocks, reason, sequence,
                                       usage_of(job, results)))


class _Blocks:
    """Content-block bookkeeping for a stream: one open block at a time, indices in order."""

    def __init__(self) -> None:
        self.index = -1
        self.kind: str | None = None

    def open(self, block: dict) -> list[str]:
        out = self.close()
        self.index += 1
        self.kind = block["type"]
        out.append(sse.event("content_block_start", {"type": "content_block_start", "index": self.index,
                                                     "content_block": block}))
        return out

    def delta(self, delta: dict) -> str:
        return sse.event("content_block_delta", {"type": "content_block_delta", "index": self.index,
                                                 "delta": delta})

    def close(self) -> list[str]:
        if self.kind is None:
            return []
        self.kind = None
        return [sse.event("content_block_stop", {"type": "content_block_stop", "index": self.index})]


async def _events(state, job: Job, msg_id: str):
    model = state.config.model_name
    start_usage = Usage(prompt_tokens=len(job.prompt_token_ids), completion_tokens=0)
    yield sse.event("message_start", {"type": "message_start",
                                      "message": message_object(msg_id, model, [], None, None, start_usage)})
    yield sse.event("ping", {"type": "ping"})
    gate = TextGate(call_format(job.tool_mode)) if job.tool_mode != "none" else None  # holds back what could start a call
    blocks = _Blocks()
    result = ChoiceResult(index=0)
    try:
        async for d in state.runner.stream(job, msg_id):
            result.add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            if d.kind == "reasoning" and d.text:
                if blocks.kind != "thinking":
                    for e in blocks.open({"type": "thinking", "thinking": "", "signature": ""}):
                        yield e
                yield blocks.delta({"type": "thinking_delta", "thinking": d.text})
            elif d.kind == "content" and d.text:
                text = d.text if gate is None else gate.push(d.text)
                if text:
                    if blocks.kind != "text":
                        for e in blocks.open({"type": "text", "text": ""}):
                            yield e
                    yield blocks.delta({"type": "text_delta", "text": text})
        final_blocks = content_blocks(job, result)
    except APIError as exc:
        yield sse.event("error", exc.body("anthropic"))
        return
    for block in final_blocks:
        if block["type"] == "tool_use":
            for e in blocks.open({**block, "input": {}}):
                yield e
            yield blocks.delta({"type": "input_json_delta",
                                "partial_json": json.dumps(block["input"], ensure_ascii=False)})
        elif block["type"] == "text":
            if blocks.kind != "text":  # also an empty answer: its block still appears
                for e in blocks.open({"type": "text", "text": ""}):
                    yield e
            rest = gate.finish(bool(result.tool_calls)) if gate else ""
            if rest:
                yield blocks.delta({"type": "text_delta", "text": rest})
    for e in blocks.close():
        yield e
    usage = usage_of(job, [result])
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    reason, sequence = stop_reason(job, result)
    yield sse.event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": reason, "stop_sequence": sequence},
                                      "usage": {"output_tokens": usage.completion_tokens}})
    yield sse.event("message_stop", {"type": "message_stop"})
