"""Render protocol-neutral chat messages into prompt tokens with the model's template.

Messages arrive here already normalized to the Hugging Face chat-template
shape ({"role", "content", optional "tool_calls"/"tool_call_id"}); tools in
the OpenAI function shape that templates expect.
"""

from __future__ import annotations

import json
from typing import Any

from deepinfer.errors import UserError
from deepinfer.server.errors import bad_request
from deepinfer.types import ToolDecl


def template_tools(tools: list[ToolDecl]) -> list[dict] | None:
    if not tools:
        return None
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.parameters}} for t in tools]


TOOLS_HINT = ("You can call these functions (JSON Schema of each one's arguments):\n<tools>\n{tools}\n</tools>\n"
              "To call one, reply with <tool_call>\n{{\"name\": <function name>, \"arguments\": "
              "<arguments object>}}\n</tool_call>")


def with_tools_hint(messages: list[dict], tools: list[ToolDecl]) -> list[dict]:
    """The conversation with the tools described in its system message (for templates that drop `tools`)."""
    listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in template_tools(tools))
    hint = TOOLS_HINT.format(tools=listing)
    if messages and messages[0].get("role") == "system":
        return [{**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{hint}"}, *messages[1:]]
    return [{"role": "system", "content": hint}, *messages]


def render_chat(tokenizer: Any, messages: list[dict], tools: list[ToolDecl]) -> tuple[str, list[int]]:
    """(prompt text, prompt token ids) for a chat; a template failure is a 400.

    A template that ignores `tools` (SmolLM2's, for one) would leave the model
    unaware of them; the tools and the call format then go into the system message.
    """
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                             tools=template_tools(tools))
        if tools and text == tokenizer.apply_chat_template(messages, add_generation_prompt=True):
            text = tokenizer.apply_chat_template(with_tools_hint(messages, tools), add_generation_prompt=True)
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
