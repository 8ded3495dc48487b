"""OpenAI Responses API request body (`POST /v1/responses`), stateless subset.

Input items are validated here by shape; `translate.py` turns them into chat
messages. Stateful features (previous_response_id, background, conversation)
are refused with a 400 rather than ignored.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field

from deepinfer.server.protocol import Strict
from deepinfer.server.protocol.openai import StructuredOutputs


class InputText(Strict):
    type: Literal["input_text", "output_text"]
    text: str
    annotations: list[Any] | None = None


class MessageItem(Strict):
    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer", "assistant"]
    content: Union[str, list[InputText]]
    id: str | None = None
    status: str | None = None


class FunctionCallItem(Strict):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: str | None = None


class FunctionCallOutputItem(Strict):
    type: Literal["function_call_output"]
    call_id: str
    output: str
    id: str | None = None
    status: str | None = None


InputItem = Union[MessageItem, FunctionCallItem, FunctionCallOutputItem]


class FormatText(Strict):
    type: Literal["text"]


class FormatJSONObject(Strict):
    type: Literal["json_object"]


class FormatJSONSchema(Strict):
    type: Literal["json_schema"]
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None


class TextConfig(Strict):
    format: Union[FormatText, FormatJSONObject, FormatJSONSchema, None] = Field(
        default=None, discriminator="type")
    verbosity: str | None = None  # a hint to the model; nothing to enforce


class FunctionTool(Strict):
    type: Literal["function"]
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamedFunctionChoice(Strict):
    type: Literal["function"]
    name: str


class Reasoning(Strict):
    effort: str | None = None
    summary: str | None = None
    generate_summary: str | None = None


class ResponsesRequest(Strict):
    model: str
    input: Union[str, list[InputItem]]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    include: list[Literal["message.output_text.logprobs"]] | None = None
    stream: bool = False
    text: TextConfig | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], NamedFunctionChoice, None] = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None  # nothing is stored: responses cannot be retrieved later
    metadata: dict[str, str] | None = None
    user: str | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["disabled"] | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    # extras (vLLM/SGLang/deepinfer), as on Chat Completions
    seed: int | None = None
    stop: Union[str, list[str], None] = None
    top_k: int | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0, le=1)
    structured_outputs: StructuredOutputs | None = None
    regex: str | None = None
    ebnf: str | None = None
    reasoning_aware: bool | None = None
