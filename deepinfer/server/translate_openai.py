"""OpenAI Chat Completions / Completions request -> `Job`.

Collects every constraint the request asks for (response_format, vLLM
structured_outputs, SGLang regex/ebnf, a forced tool call), refuses two, and
refuses contradictory fields, each with a 400 naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from deepinfer.server.config import ServerConfig
from deepinfer.server.constraint_spec import json_object_spec, single_constraint
from deepinfer.server.errors import bad_request
from deepinfer.server.extra_fields import extra_field_specs
from deepinfer.server.params import client_params
from deepinfer.server.prompt import check_context, render_chat, render_text
from deepinfer.server.protocol.openai import ChatCompletionRequest, CompletionRequest
from deepinfer.server.structural_tag import structural_tag_spec
from deepinfer.server.tool_calls import request_constraint
from deepinfer.types import ConstraintSpec, Job, SamplingParams, ToolDecl


def response_format_spec(fmt, whitespace: str | None = None,
                         source: str = "response_format") -> ConstraintSpec | None:
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return json_object_spec(source)
    if fmt.type == "structural_tag":
        return structural_tag_spec(fmt, source, whitespace)
    js = fmt.json_schema
    if js.schema_ is None:
        raise bad_request(f"'{source}.json_schema.schema' is required: without a schema nothing "
                          "can be enforced", param=f"{source}.json_schema.schema")
    return ConstraintSpec("json_schema", js.schema_, f"{source}.json_schema.schema", strict=bool(js.strict))


def stop_list(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else list(stop)
    if len(stops) > 4:
        raise bad_request("'stop' takes at most 4 sequences", param="stop")
    if any(s == "" for s in stops):
        raise bad_request("'stop' sequences must not be empty", param="stop")
    return stops


MAX_TOKEN_ID = (1 << 31) - 1  # beyond any vocabulary; the engine checks the real one at admission


def token_ids(prompt: list[int], config: ServerConfig) -> list[int]:
    """A prompt given as token ids, each a plausible id (the engine checks its vocabulary)."""
    if config.max_model_len is not None and len(prompt) >= config.max_model_len:
        raise bad_request(f"the prompt has {len(prompt)} tokens; the model's context length is "
                          f"{config.max_model_len}", param="prompt", code="context_length_exceeded")
    for i, token in enumerate(prompt):
        if not 0 <= token <= MAX_TOKEN_ID:
            raise bad_request(f"'prompt[{i}]': {token} is not a token id", param="prompt")
    return list(prompt)


def logit_bias(bias: dict[str, float] | None) -> dict[int, float] | None:
    """OpenAI's logit_bias: token id (as a JSON key) -> a bias in [-100, 100]."""
    if bias is None:
        return None
    out = {}
    for key, value in bias.items():
        if not (key.isascii() and key.isdigit()) or int(key) > MAX_TOKEN_ID:
            raise bad_request(f"'logit_bias': the key {key!r} is not a token id", param="logit_bias")
        if not -100 <= value <= 100:  # NaN and infinities fail this too
            raise bad_request(f"'logit_bias.{key}': the bias {value!r} is outside [-100, 100]",
                              param="logit_bias")
        out[int(key)] = float(value)
    return out


def sampling(req, max_tokens: int, logprobs: int | None, config: ServerConfig) -> SamplingParams:
    return client_params(n=req.n, max_tokens=max_tokens, temperature=req.temperature, top_p=req.top_p,
                         top_k=req.top_k, min_p=req.min_p, seed=req.seed, stop=stop_list(req.stop),
                         presence_penalty=req.presence_penalty, frequency_penalty=req.frequency_penalty,
                         repetition_penalty=req.repetition_penalty, logit_bias=logit_bias(req.logit_bias),
                         logprobs=logprobs, json_whitespace=config.json_whitespace)


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content)


def chat_messages(req: ChatCompletionRequest) -> list[dict[str, Any]]:
    """OpenAI messages -> chat-template messages (developer becomes system)."""
    out = []
    for msg in req.messages:
        item: dict[str, Any] = {"role": "system" if msg.role == "developer" else msg.role,
                                "content": _text(msg.content)}
        if msg.tool_calls:
            item["tool_calls"] = [{"id": c.id, "type": "function",
                                   "function": {"name": c.function.name,
                                                "arguments": _json_or_text(c.function.arguments)}}
                                  for c in msg.tool_calls]
        if msg.tool_call_id is not None:
            item["tool_call_id"] = msg.tool_call_id
        if msg.name is not None:
            item["name"] = msg.name
        out.append(item)
    return out


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def tool_decls(req: ChatCompletionRequest) -> list[ToolDecl]:
    return [ToolDecl(t.function.name, t.function.description,
                     t.function.parameters or {"type": "object", "properties": {}},
                     bool(t.function.strict), f"tools[{i}].function.parameters")
            for i, t in enumerate(req.tools or [])]


def tool_mode(tools: list[ToolDecl], choice) -> tuple[str, str | None]:
    """('none'|'auto'|'forced', named tool or None) from tools + tool_choice."""
    if choice is None:
        return ("auto" if tools else "none"), None
    if choice == "none":
        return "none", None
    if not tools:
        raise bad_request("'tool_choice' is set but no 'tools' are declared", param="tool_choice")
    if choice == "auto":
        return "auto", None
    if choice == "required":
        return "forced", None
    return "forced", choice.function.name


def max_tokens_field(req: ChatCompletionRequest) -> int | None:
    a, b = req.max_tokens, req.max_completion_tokens
    if a is not None and b is not None and a != b:
        raise bad_request("'max_tokens' and 'max_completion_tokens' disagree; set one of them",
                          param="max_completion_tokens")
    return b if b is not None else a


def chat_job(req: ChatCompletionRequest, tokenizer: Any, config: ServerConfig) -> Job:
    if req.top_logprobs is not None and not req.logprobs:
        raise bad_request("'top_logprobs' requires 'logprobs': true", param="top_logprobs")
    if req.stream_options is not None and not req.stream:
        raise bad_request("'stream_options' is only allowed with 'stream': true", param="stream_options")
    tools = tool_decls(req)
    mode, named = tool_mode(tools, req.tool_choice)
    fmt = response_format_spec(req.response_format, config.json_whitespace)
    candidates = [fmt] if fmt is not None else []
    candidates += extra_field_specs(req, config.json_whitespace)
    parallel = req.parallel_tool_calls is not False
    constraint = request_constraint(candidates, tools, mode, named, parallel, config.json_whitespace)
    requested = max_tokens_field(req)
    text, ids = render_chat(tokenizer, chat_messages(req), tools if mode != "none" else [], config, requested)
    max_tokens = config.max_tokens(requested, len(ids))
    check_context(ids, max_tokens, config.max_model_len)
    logprobs = (req.top_logprobs or 0) if req.logprobs else None
    return Job(prompt_token_ids=ids, prompt_text=text, params=sampling(req, max_tokens, logprobs, config),
               constraint=constraint, tool_mode=mode, tools=tools, parallel_tool_calls=parallel,
               reasoning_aware=_reasoning(req, config), reasoning_end=config.reasoning_end)


def completion_job(req: CompletionRequest, tokenizer: Any, config: ServerConfig) -> Job:
    if req.suffix is not None:
        raise bad_request("'suffix' (insertion) is not supported", param="suffix")
    if req.reasoning_aware:  # raw text has no place to put the reasoning apart from the answer
        raise bad_request("'reasoning_aware' is supported on chat routes only (chat completions, "
                          "responses, messages)", param="reasoning_aware")
    if req.best_of is not None and req.best_of != req.n:
        raise bad_request("'best_of' different from 'n' is not supported", param="best_of")
    if req.stream_options is not None and not req.stream:
        raise bad_request("'stream_options' is only allowed with 'stream': true", param="stream_options")
    prompt = req.prompt
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        if len(prompt) != 1:
            raise bad_request("a list of several prompts is not supported; send one request per prompt",
                              param="prompt")
        prompt = prompt[0]
    if isinstance(prompt, list):
        ids = token_ids(prompt, config)
        text = tokenizer.decode(ids, skip_special_tokens=False)
    else:
        text, ids = render_text(tokenizer, prompt, config, req.max_tokens)
    if not ids:
        raise bad_request("'prompt' is empty", param="prompt")
    fmt = response_format_spec(req.response_format, config.json_whitespace)
    candidates = [fmt] if fmt is not None else []
    constraint = single_constraint(candidates + extra_field_specs(req, config.json_whitespace))
    max_tokens = config.max_tokens(req.max_tokens, len(ids))
    check_context(ids, max_tokens, config.max_model_len)
    return Job(prompt_token_ids=ids, prompt_text=text, params=sampling(req, max_tokens, req.logprobs, config),
               constraint=constraint)


def _reasoning(req, config: ServerConfig) -> bool:
    return config.reasoning_aware if req.reasoning_aware is None else req.reasoning_aware
