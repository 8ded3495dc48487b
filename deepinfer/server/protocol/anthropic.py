"""Anthropic Messages request body (`POST /v1/messages`).

Structured output comes in `output_config.format` (GA) or the beta's
`output_format`; tools are `{name, description, input_schema, strict}`.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field

from deepinfer.server.protocol import Strict
from deepinfer.server.protocol.openai import StructuredOutputs


class CacheControl(Strict):
    type: Literal["ephemeral"]
    ttl: str | None = None


class TextBlock(Strict):
    type: Literal["text"]
    text: str
    cache_control: CacheControl | None = None
    citations: list[Any] | None = None


class ToolUseBlock(Strict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: CacheControl | None = None


class ToolResultBlock(Strict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: Union[str, list[TextBlock], None] = None
    is_error: bool | None = None
    cache_control: CacheControl | None = None


class ThinkingBlock(Strict):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


ContentBlock = Union[TextBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock]


class Message(Strict):
    role: Literal["user", "assistant"]
    content: Union[str, list[ContentBlock]]


class ToolDef(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,128}$")
    description: str | None = None
    input_schema: dict[str, Any]
    strict: bool | None = None
    type: Literal["custom"] | None = None
    cache_control: CacheControl | None = None


class ToolChoice(Strict):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class JSONOutputFormat(Strict):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(Strict):
    format: JSONOutputFormat | None = None
    effort: str | None = None  # a hint to the model; nothing to enforce


class Metadata(Strict):
    user_id: str | None = None


class Thinking(Strict):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None


class MessagesRequest(Strict):
    model: str
    max_tokens: int = Field(ge=1)
    messages: list[Message] = Field(min_length=1)
    system: Union[str, list[TextBlock], None] = None
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    tools: list[ToolDef] | None = None
    tool_choice: ToolChoice | None = None
    output_config: OutputConfig | None = None
    output_format: JSONOutputFormat | None = None  # the structured-outputs beta's spelling
    metadata: Metadata | None = None
    service_tier: str | None = None
    thinking: Thinking | None = None
    # extras, as on the OpenAI side
    seed: int | None = None
    structured_outputs: StructuredOutputs | None = None
    regex: str | None = None
    ebnf: str | None = None
    reasoning_aware: bool | None = None
