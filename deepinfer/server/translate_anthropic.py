"""Anthropic Messages request -> `Job`."""

from __future__ import annotations

from typing import Any

from deepinfer.server.config import ServerConfig
from deepinfer.server.errors import bad_request
from deepinfer.server.extra_fields import extra_field_specs
from deepinfer.server.params import client_params
from deepinfer.server.prompt import check_context, render_chat
from deepinfer.server.protocol.anthropic import MessagesRequest, ToolResultBlock, ToolUseBlock
from deepinfer.server.tool_calls import request_constraint
from deepinfer.types import ConstraintSpec, Job, ToolDecl


def _text_of(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content)


def chat_messages(req: MessagesRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if req.system:
        messages.append({"role": "system", "content": _text_of(req.system)})
    for msg in req.messages:
        if isinstance(msg.content, str):
            messages.append({"role": msg.role, "content": msg.content})
            continue
        text = "".join(b.text for b in msg.content if b.type == "text")
        calls = [b for b in msg.content if isinstance(b, ToolUseBlock)]
        results = [b for b in msg.content if isinstance(b, ToolResultBlock)]
        for r in results:  # tool results answer the previous assistant turn
            messages.append({"role": "tool", "content": _text_of(r.content), "tool_call_id": r.tool_use_id})
        if text or calls or not results:
            item: dict[str, Any] = {"role": msg.role, "content": text}
            if calls:
                item["tool_calls"] = [{"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": c.input}} for c in calls]
            messages.append(item)
    return messages


def output_format_specs(req: MessagesRequest) -> list[ConstraintSpec]:
    specs = []
    if req.output_config is not None and req.output_config.format is not None:
        specs.append(ConstraintSpec("json_schema", req.output_config.format.schema_,
                                    "output_config.format.schema", strict=True))
    if req.output_format is not None:
        specs.append(ConstraintSpec("json_schema", req.output_format.schema_, "output_format.schema",
                                    strict=True))
    return specs


def tool_mode(req: MessagesRequest, tools: list[ToolDecl]) -> tuple[str, str | None]:
    choice = req.tool_choice
    if choice is None:
        return ("auto" if tools else "none"), None
    if choice.type == "none":
        return "none", None
    if not tools:
        raise bad_request("'tool_choice' is set but no 'tools' are declared", param="tool_choice")
    if choice.name is not None and choice.type != "tool":
        raise bad_request(f"'tool_choice.name' is only allowed with type 'tool', not '{choice.type}'",
                          param="tool_choice.name")
    if choice.type == "auto":
        return "auto", None
    if choice.type == "any":
        return "forced", None
    if choice.name is None:
        raise bad_request("'tool_choice' of type 'tool' needs a 'name'", param="tool_choice.name")
    return "forced", choice.name


def messages_job(req: MessagesRequest, tokenizer: Any, config: ServerConfig) -> Job:
    tools = [ToolDecl(t.name, t.description, t.input_schema, bool(t.strict), f"tools[{i}].input_schema")
             for i, t in enumerate(req.tools or [])]
    mode, named = tool_mode(req, tools)
    candidates = output_format_specs(req) + extra_field_specs(req, config.json_whitespace)
    parallel = not (req.tool_choice is not None and req.tool_choice.disable_parallel_tool_use)
    constraint = request_constraint(candidates, tools, mode, named, parallel, config.json_whitespace)
    text, ids = render_chat(tokenizer, chat_messages(req), tools if mode != "none" else [], config,
                            req.max_tokens)
    check_context(ids, req.max_tokens, config.max_model_len)
    params = client_params(max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p,
                           top_k=req.top_k, seed=req.seed, stop=list(req.stop_sequences or []),
                           json_whitespace=config.json_whitespace)
    if req.reasoning_aware is not None:
        reasoning = req.reasoning_aware
    elif req.thinking is not None:
        reasoning = req.thinking.type != "disabled"
    else:
        reasoning = config.reasoning_aware
    return Job(prompt_token_ids=ids, prompt_text=text, params=params, constraint=constraint,
               tool_mode=mode, tools=tools, parallel_tool_calls=parallel, reasoning_aware=reasoning,
               reasoning_end=config.reasoning_end)
