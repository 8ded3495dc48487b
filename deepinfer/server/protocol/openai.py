"""OpenAI Chat Completions and Completions request bodies (plus vLLM/SGLang extras).

Only shapes and per-field value checks live here; translation into engine
parameters and constraints is `translate.py`'s job.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field

from deepinfer.server.protocol import Strict


class TextPart(Strict):
    type: Literal["text"]
    text: str


class FunctionCall(Strict):
    name: str
    arguments: str


class ToolCall(Strict):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(Strict):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Union[str, list[TextPart], None] = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    refusal: str | None = None  # echoed back by clients in multi-turn history


class FunctionDef(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(Strict):
    type: Literal["function"]
    function: FunctionDef


class NamedFunction(Strict):
    name: str


class NamedToolChoice(Strict):
    type: Literal["function"]
    function: NamedFunction


class JSONSchemaFormat(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    # The OpenAI SDK sends "schema"; pydantic reserves the attribute name.
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormatText(Strict):
    type: Literal["text"]


class ResponseFormatJSONObject(Strict):
    type: Literal["json_object"]


class ResponseFormatJSONSchema(Strict):
    type: Literal["json_schema"]
    json_schema: JSONSchemaFormat


class StructuralTagStructure(Strict):
    begin: str
    schema_: dict[str, Any] = Field(alias="schema")
    end: str


class ResponseFormatStructuralTag(Strict):
    """vLLM/SGLang `structural_tag`: `structures` + `triggers`, or xgrammar's `format` object."""

    type: Literal["structural_tag"]
    structures: list[StructuralTagStructure] | None = None
    triggers: list[str] | None = None
    format: dict[str, Any] | None = None  # checked field by field in server/structural_tag.py


ResponseFormat = Union[ResponseFormatText, ResponseFormatJSONObject, ResponseFormatJSONSchema,
                       ResponseFormatStructuralTag]


class StructuredOutputs(Strict):
    """vLLM's `structured_outputs` extra field: exactly one of the constraint keys."""

    json_: Union[dict[str, Any], str, None] = Field(default=None, alias="json")
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    structural_tag: Union[str, dict[str, Any], None] = None  # vLLM: the structural_tag object (or its JSON)
    whitespace_pattern: str | None = None


class StreamOptions(Strict):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None  # obfuscation padding is not emitted; harmless


class SamplingFields(Strict):
    """Fields shared by Chat Completions and Completions."""

    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    n: int = Field(default=1, ge=1, le=16)
    seed: int | None = None
    stop: Union[str, list[str], None] = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = None  # an end-user id for abuse tracking; nothing to do locally
    # vLLM / SGLang extras
    top_k: int | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0, le=1)
    repetition_penalty: float | None = Field(default=None, gt=0)
    structured_outputs: StructuredOutputs | None = None
    regex: str | None = None
    ebnf: str | None = None
    # deepinfer: free text until the reasoning end tag, then the constraint (None: server default)
    reasoning_aware: bool | None = None


class ChatCompletionRequest(SamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    response_format: ResponseFormat | None = Field(default=None, discriminator="type")
    tools: list[Tool] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], NamedToolChoice, None] = None
    parallel_tool_calls: bool | None = None
    # Accepted for compatibility; they change nothing a local server does.
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None
    reasoning_effort: str | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None


class CompletionRequest(SamplingFields):
    prompt: Union[str, list[str], list[int]]
    logprobs: int | None = Field(default=None, ge=0, le=20)
    echo: bool = False
    suffix: str | None = None
    best_of: int | None = Field(default=None, ge=1)
    # vLLM accepts response_format on completions too
    response_format: ResponseFormat | None = Field(default=None, discriminator="type")
