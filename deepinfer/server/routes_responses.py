"""`POST /v1/responses`: the Response object and its typed stream events."""

from __future__ import annotations

import json
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from deepinfer.server import sse
from deepinfer.server.errors import APIError
from deepinfer.server.format_openai import new_id, raise_if_failed, token_logprob_json
from deepinfer.server.protocol.responses import ResponsesRequest
from deepinfer.server.state import admitted_job, collect, usage_of
from deepinfer.server.tool_calls import TextGate, call_format, resolve_tool_calls
from deepinfer.server.translate_responses import responses_job
from deepinfer.types import ChoiceResult, DecodedLogprob, Job, Usage

router = APIRouter()


def _logprobs(job: Job, lps: list[DecodedLogprob]) -> list[dict]:
    if job.params.logprobs is None:
        return []
    return [token_logprob_json(lp) for lp in lps]  # the same entry shape as Chat Completions


def _usage(usage: Usage) -> dict:
    return {"input_tokens": usage.prompt_tokens, "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.completion_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total_tokens}


def output_items(job: Job, result: ChoiceResult, msg_id: str) -> list[dict]:
    """A reasoning item if any, then the message (when there is text or no call), then the calls."""
    resolve_tool_calls(job, result)
    reasoning = ([{"type": "reasoning", "id": new_id("rs_"), "summary": [],
                   "content": [{"type": "reasoning_text", "text": result.reasoning}]}]
                 if result.reasoning else [])
    calls = [{"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"), "name": name,
              "arguments": json.dumps(args, ensure_ascii=False), "status": "completed"}
             for name, args in result.tool_calls]
    part = {"type": "output_text", "text": result.text, "annotations": [],
            "logprobs": _logprobs(job, result.logprobs)}
    message = ([{"type": "message", "id": msg_id, "status": "completed", "role": "assistant",
                 "content": [part]}] if result.text or not calls else [])
    return reasoning + message + calls


def response_object(req: ResponsesRequest, resp_id: str, created: int, model: str, status: str,
                    output: list[dict], usage: Usage | None, finish: str | None) -> dict:
    incomplete = {"reason": "max_output_tokens"} if finish == "length" else None
    return {"id": resp_id, "object": "response", "created_at": created, "model": model,
            "status": "incomplete" if incomplete and status == "completed" else status,
            "incomplete_details": incomplete, "error": None, "instructions": req.instructions,
            "max_output_tokens": req.max_output_tokens, "metadata": req.metadata or {}, "output": output,
            "parallel_tool_calls": req.parallel_tool_calls if req.parallel_tool_calls is not None else True,
            "previous_response_id": None, "reasoning": None, "store": False,
            "temperature": req.temperature, "top_p": req.top_p,
            "text": req.text.model_dump(by_alias=True, exclude_none=True) if req.text else {"format": {"type": "text"}},
            "tool_choice": req.tool_choice if isinstance(req.tool_choice, str) or req.tool_choice is None
            else req.tool_choice.model_dump(),
            "tools": [t.model_dump(exclude_none=True) for t in req.tools or []], "truncation": "disabled",
            "user": req.user, "usage": _usage(usage) if usage is not None else None}


@router.post("/v1/responses")
async def responses(request: Request):
    state, req, job = await admitted_job(request, ResponsesRequest, responses_job)
    resp_id, created, model = new_id("resp_"), int(time.time()), state.config.model_name
    if req.stream:
        return sse.response(_events(state, req, job, resp_id, created))
    results = await collect(state, job, resp_id, request)
    raise_if_failed(results)
    output = output_items(job, results[0], new_id("msg_"))
    return JSONResponse(response_object(req, resp_id, created, model, "completed", output,
                                        usage_of(job, results), results[0].finish_reason))


async def _events(state, req, job, resp_id, created):
    seq = 0
    model = state.config.model_name

    def ev(kind: str, **payload) -> str:
        nonlocal seq
        seq += 1
        return sse.event(kind, {"type": kind, "sequence_number": seq - 1, **payload})

    base = response_object(req, resp_id, created, model, "in_progress", [], None, None)
    yield ev("response.created", response=base)
    yield ev("response.in_progress", response=base)
    result = ChoiceResult(index=0)
    msg_id = new_id("msg_")
    # Text streams as it comes (a tool-capable choice's through a gate that holds back what could
    # start a call); reasoning before a constrained answer goes out as a whole item at the end.
    live = not (job.reasoning_aware and job.constraint is not None)
    gate = TextGate(call_format(job.tool_mode)) if job.tool_mode != "none" else None
    loc = {"item_id": msg_id, "output_index": 0, "content_index": 0}
    opened = False
    try:
        async for d in state.runner.stream(job, resp_id):
            result.add(d)
            if d.finish_reason == "error":
                raise APIError(500, f"generation failed: {d.error or 'unknown engine error'}")
            if not live or d.kind != "content":
                continue
            text = d.text if gate is None else gate.push(d.text)
            if not (text or (gate is None and d.logprobs) or (gate is None and not opened)):
                continue
            if not opened:
                opened = True
                for e in _open_message(ev, msg_id, loc):
                    yield e
            if text or d.logprobs:
                yield ev("response.output_text.delta", **loc, delta=text, logprobs=_logprobs(job, d.logprobs))
        items = output_items(job, result, msg_id)
    except APIError as exc:
        failed = response_object(req, resp_id, created, model, "failed", [], None, None)
        failed["error"] = {"code": "server_error", "message": exc.message}
        yield ev("response.failed", response=failed)
        return
    rest = gate.finish(bool(result.tool_calls)) if gate is not None and opened else ""
    if rest:
        yield ev("response.output_text.delta", **loc, delta=rest, logprobs=[])
    for index, item in enumerate(items):
        for e in _item_events(ev, item, index, live=opened and item["type"] == "message"):
            yield e
    usage = usage_of(job, [result])
    state.metrics.record_tokens(usage.prompt_tokens, usage.completion_tokens)
    final = response_object(req, resp_id, created, model, "completed", items, usage, result.finish_reason)
    yield ev("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)


def _open_message(ev, msg_id: str, loc: dict):
    yield ev("response.output_item.added", output_index=0,
             item={"type": "message", "id": msg_id, "status": "in_progress", "role": "assistant", "content": []})
    yield ev("response.content_part.added", **loc,
             part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})


def _item_events(ev, item: dict, index: int, live: bool):
    """The events of one finished output item (`live`: its message was opened and streamed already)."""
    if item["type"] == "function_call":
        yield ev("response.output_item.added", output_index=index,
                 item={**item, "arguments": "", "status": "in_progress"})
        yield ev("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                 delta=item["arguments"])
        yield ev("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                 name=item["name"], arguments=item["arguments"])
    elif item["type"] == "message":
        part = item["content"][0]
        loc = {"item_id": item["id"], "output_index": index, "content_index": 0}
        if not live:
            yield ev("response.output_item.added", output_index=index,
                     item={**item, "status": "in_progress", "content": []})
            yield ev("response.content_part.added", **loc, part={**part, "text": ""})
            yield ev("response.output_text.delta", **loc, delta=part["text"], logprobs=part["logprobs"])
        yield ev("response.output_text.done", **loc, text=part["text"], logprobs=part["logprobs"])
        yield ev("response.content_part.done", **loc, part=part)
    else:  # reasoning: whole
        yield ev("response.output_item.added", output_index=index, item=item)
    yield ev("response.output_item.done", output_index=index, item=item)
