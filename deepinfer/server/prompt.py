"""Render protocol-neutral chat messages into prompt tokens with the model's template.

Messages arrive here already normalized to the Hugging Face chat-template
shape ({"role", "content", optional "tool_calls"/"tool_call_id"}); tools in
the OpenAI function shape that templates expect.
"""

from __future__ import annotations

from typing import Any

from deepinfer.errors import UserError
from deepinfer.server.constraint_spec import ToolDecl
from deepinfer.server.errors import bad_request


def template_tools(tools: list[ToolDecl]) -> list[dict] | None:
    if not tools:
        return None
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.parameters}} for t in tools]


def render_chat(tokenizer: Any, messages: list[dict], tools: list[ToolDecl]) -> tuple[str, list[int]]:
    """(prompt text, prompt token ids) for a chat; a template failure is a 400."""
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                             tools=template_tools(tools))
    except UserError as exc:
        raise bad_request(f"cannot apply the model's chat template to these messages: {exc}",
                          param="messages") from None
    # The template already spells out BOS and role markers as text.
    return text, tokenizer.encode(text, add_special_tokens=False)


def render_text(tokenizer: Any, prompt: str) -> tuple[str, list[int]]:
    """A raw completion prompt, with the tokenizer's usual special tokens (BOS)."""
    return prompt, tokenizer.encode(prompt, add_special_tokens=True)


def check_context(prompt_ids: list[int], max_tokens: int, max_model_len: int | None) -> None:
    if max_model_len is not None and len(prompt_ids) + max_tokens > max_model_len:
        raise bad_request(f"the prompt has {len(prompt_ids)} tokens and max_tokens is {max_tokens}, "
                          f"which exceeds the model's context length of {max_model_len} tokens",
                          param="max_tokens", code="context_length_exceeded")
