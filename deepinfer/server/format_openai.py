"""Finished choices and deltas -> OpenAI Chat Completions / Completions JSON.

Non-streaming bodies and the `chat.completion.chunk` / `text_completion`
stream chunks, in the shapes the official SDK parses. Tool calls come back as
`message.tool_calls` with `finish_reason: "tool_calls"`.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from deepinfer.server.errors import APIError
from deepinfer.server.tool_calls import TextGate, call_format, resolve_tool_calls
from deepinfer.types import ChoiceResult, DecodedLogprob, Job, Usage


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


def usage_json(usage: Usage) -> dict:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}}


def finish_reason(reason: str | None) -> str:
    return {"length": "length"}.get(reason or "stop", "stop")


def raise_if_failed(results: list[ChoiceResult]) -> None:
    for r in results:
        if r.finish_reason == "error":
            raise APIError(500, f"generation failed: {r.error or 'unknown engine error'}")


def token_logprob_json(lp: DecodedLogprob) -> dict:
    def entry(token: str, logprob: float, raw: list[int] | None) -> dict:
        return {"token": token, "logprob": logprob,
                "bytes": raw if raw is not None else list(token.encode("utf-8"))}
    tops = lp.top_bytes or [None] * len(lp.top)
    return {**entry(lp.token, lp.logprob, lp.bytes),
            "top_logprobs": [entry(t, p, raw) for (t, _, p), raw in zip(lp.top, tops)]}


def chat_logprobs(job: Job, logprobs: list[DecodedLogprob]) -> dict | None:
    if job.params.logprobs is None:
        return None
    return {"content": [token_logprob_json(lp) for lp in logprobs], "refusal": None}


def tool_calls_json(calls: list[tuple[str, dict]]) -> list[dict]:
    return [{"id": new_id("call_"), "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for name, args in calls]


def chat_message(job: Job, result: ChoiceResult) -> tuple[dict, str]:
    resolve_tool_calls(job, result)
    if result.tool_calls:
        msg = {"role": "assistant", "content": result.text or None, "refusal": None,
               "tool_calls": tool_calls_json(result.tool_calls)}
        reason = "length" if result.finish_reason == "length" else "tool_calls"
    else:
        msg = {"role": "assistant", "content": result.text, "refusal": None}
        reason = finish_reason(result.finish_reason)
    if job.reasoning_aware and job.constraint is not None:  # vLLM / DeepSeek convention
        msg["reasoning_content"] = result.reasoning
    return msg, reason


def chat_completion(job: Job, results: list[ChoiceResult], model: str, usage: Usage) -> dict:
    raise_if_failed(results)
    choices = []
    for r in results:
        message, reason = chat_message(job, r)
        choices.append({"index": r.index, "message": message, "logprobs": chat_logprobs(job, r.logprobs),
                        "finish_reason": reason})
    return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": model, "system_fingerprint": "deepinfer", "choices": choices,
            "usage": usage_json(usage)}


def completion_logprobs(job: Job, logprobs: list[DecodedLogprob], offset: int) -> dict | None:
    if job.params.logprobs is None:
        return None
    offsets = []
    for lp in logprobs:
        offsets.append(offset)
        offset += len(lp.token)
    return {"tokens": [lp.token for lp in logprobs], "token_logprobs": [lp.logprob for lp in logprobs],
            "top_logprobs": [{t: p for t, _, p in lp.top} for lp in logprobs], "text_offset": offsets}


def completion(job: Job, results: list[ChoiceResult], model: str, usage: Usage, echo: bool) -> dict:
    raise_if_failed(results)
    prefix = job.prompt_text if echo else ""
    choices = [{"index": r.index, "text": prefix + r.text,
                "logprobs": completion_logprobs(job, r.logprobs, len(prefix)),
                "finish_reason": finish_reason(r.finish_reason)} for r in results]
    return {"id": new_id("cmpl-"), "object": "text_completion", "created": int(time.time()),
            "model": model, "system_fingerprint": "deepinfer", "choices": choices,
            "usage": usage_json(usage)}


class ChatChunks:
    """Builds `chat.completion.chunk` objects for one streamed request."""

    def __init__(self, job: Job, model: str) -> None:
        self.job = job
        self.id = new_id("chatcmpl-")
        self.created = int(time.time())
        self.model = model
        # Tool-capable choices stream their text through a gate that holds back anything that
        # could start a call; calls go out parsed when the choice ends.
        self.buffer_tools = job.tool_mode != "none"
        self.gates = {i: TextGate(call_format(job.tool_mode)) for i in range(job.n)} if self.buffer_tools else {}

    def chunk(self, choices: list[dict], usage: Usage | None = None) -> dict:
        body: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                "model": self.model, "system_fingerprint": "deepinfer", "choices": choices}
        if usage is not None:
            body["usage"] = usage_json(usage)
        return body

    def role(self, index: int) -> dict:
        return self.chunk([{"index": index, "delta": {"role": "assistant", "content": ""},
                            "logprobs": None, "finish_reason": None}])

    def content(self, index: int, text: str, logprobs: list[DecodedLogprob], kind: str = "content") -> dict:
        key = "reasoning_content" if kind == "reasoning" else "content"
        return self.chunk([{"index": index, "delta": {key: text},
                            "logprobs": chat_logprobs(self.job, logprobs), "finish_reason": None}])

    def gated(self, index: int, text: str, logprobs: list[DecodedLogprob]) -> list[dict]:
        """A tool-capable choice's delta: the text that cannot be part of a call (logprobs as they come)."""
        text = self.gates[index].push(text)
        return [self.content(index, text, logprobs)] if text or logprobs else []

    def finish(self, result: ChoiceResult) -> list[dict]:
        """Closing chunk(s) of a choice: for a tool-capable one, held-back text and the parsed calls."""
        out = []
        if self.buffer_tools:
            message, reason = chat_message(self.job, result)
            rest = self.gates[result.index].finish(bool(message.get("tool_calls")))
            if rest:
                out.append(self.content(result.index, rest, []))
            if message.get("tool_calls"):
                calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
                out.append(self.chunk([{"index": result.index, "delta": {"tool_calls": calls},
                                        "logprobs": None, "finish_reason": None}]))
        else:
            reason = finish_reason(result.finish_reason)
        out.append(self.chunk([{"index": result.index, "delta": {}, "logprobs": None,
                                "finish_reason": reason}]))
        return out

    def usage(self, usage: Usage) -> dict:
        return self.chunk([], usage)


class CompletionChunks:
    def __init__(self, job: Job, model: str) -> None:
        self.job = job
        self.id = new_id("cmpl-")
        self.created = int(time.time())
        self.model = model

    def chunk(self, index: int, text: str, logprobs: list[DecodedLogprob] | None, reason: str | None,
              offset: int = 0) -> dict:
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"index": index, "text": text, "finish_reason": reason,
                             "logprobs": completion_logprobs(self.job, logprobs or [], offset)
                             if logprobs is not None else None}]}

    def usage(self, usage: Usage) -> dict:
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [], "usage": usage_json(usage)}
