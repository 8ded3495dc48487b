"""OpenAI Responses request -> `Job` (stateless: every turn is in `input`)."""

from __future__ import annotations

import json
from typing import Any

from deepinfer.server.config import ServerConfig
from deepinfer.server.constraint_spec import json_object_spec
from deepinfer.server.errors import bad_request
from deepinfer.server.extra_fields import extra_field_specs
from deepinfer.server.params import client_params
from deepinfer.server.prompt import check_context, render_chat
from deepinfer.server.protocol.responses import (FunctionCallItem, FunctionCallOutputItem,
                                                 ResponsesRequest)
from deepinfer.server.tool_calls import request_constraint
from deepinfer.server.translate_openai import stop_list
from deepinfer.types import ConstraintSpec, Job, ToolDecl


def input_messages(req: ResponsesRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if req.instructions:
        messages.append({"role": "system", "content": req.instructions})
    if isinstance(req.input, str):
        messages.append({"role": "user", "content": req.input})
        return messages
    for item in req.input:
        if isinstance(item, FunctionCallItem):
            try:
                args = json.loads(item.arguments)
            except json.JSONDecodeError:
                args = item.arguments
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [{"id": item.call_id, "type": "function",
                                             "function": {"name": item.name, "arguments": args}}]})
        elif isinstance(item, FunctionCallOutputItem):
            messages.append({"role": "tool", "content": item.output, "tool_call_id": item.call_id})
        else:
            text = item.content if isinstance(item.content, str) else "".join(p.text for p in item.content)
            messages.append({"role": "system" if item.role == "developer" else item.role, "content": text})
    return messages


def text_format_spec(req: ResponsesRequest) -> ConstraintSpec | None:
    fmt = req.text.format if req.text is not None else None
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return json_object_spec("text.format")
    return ConstraintSpec("json_schema", fmt.schema_, "text.format.schema", strict=bool(fmt.strict))


def _logprobs(req: ResponsesRequest) -> int | None:
    """Logprobs are returned when asked for by `include` or by `top_logprobs`."""
    if req.include and "message.output_text.logprobs" in req.include:
        return req.top_logprobs or 0
    return req.top_logprobs


def responses_job(req: ResponsesRequest, tokenizer: Any, config: ServerConfig) -> Job:
    tools = [ToolDecl(t.name, t.description, t.parameters or {"type": "object", "properties": {}},
                      bool(t.strict), f"tools[{i}].parameters") for i, t in enumerate(req.tools or [])]
    choice = req.tool_choice
    if choice not in (None, "none") and not tools:
        raise bad_request("'tool_choice' is set but no 'tools' are declared", param="tool_choice")
    if choice == "none" or not tools:
        mode, named = "none", None
    elif choice in (None, "auto"):
        mode, named = "auto", None
    else:
        mode, named = "forced", (None if choice == "required" else choice.name)
    candidates = [s for s in [text_format_spec(req)] if s is not None]
    candidates += extra_field_specs(req, config.json_whitespace)
    parallel = req.parallel_tool_calls is not False
    constraint = request_constraint(candidates, tools, mode, named, parallel, config.json_whitespace)
    text, ids = render_chat(tokenizer, input_messages(req), tools if mode != "none" else [], config,
                            req.max_output_tokens)
    max_tokens = config.max_tokens(req.max_output_tokens, len(ids))
    check_context(ids, max_tokens, config.max_model_len)
    params = client_params(max_tokens=max_tokens, temperature=req.temperature, top_p=req.top_p,
                           top_k=req.top_k, min_p=req.min_p, seed=req.seed, stop=stop_list(req.stop),
                           logprobs=_logprobs(req), json_whitespace=config.json_whitespace)
    reasoning = config.reasoning_aware if req.reasoning_aware is None else req.reasoning_aware
    return Job(prompt_token_ids=ids, prompt_text=text, params=params, constraint=constraint,
               tool_mode=mode, tools=tools, parallel_tool_calls=parallel, reasoning_aware=reasoning,
               reasoning_end=config.reasoning_end)
