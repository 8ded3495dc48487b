"""Render protocol-neutral chat messages into prompt tokens with the model's template.

Messages arrive here already normalized to the Hugging Face chat-template
shape ({"role", "content", optional "tool_calls"/"tool_call_id"}); tools in
the OpenAI function shape that templates expect.

A text is never tokenized when its length alone shows it cannot fit the context: no
token covers more characters than the longest token in the vocabulary, so a text of
C characters has at least C / (that length) tokens (halved again for normalizers
that merge characters). A 10 MB prompt is refused in microseconds instead of being
tokenized for seconds.
"""

from __future__ import annotations

import json
from typing import Any

from deepinfer.errors import UserError
from deepinfer.server.config import ServerConfig
from deepinfer.server.errors import bad_request
from deepinfer.types import ToolDecl

NORMALIZER_SLACK = 2  # a normalizer (NFKC, ...) may merge up to two input characters into one


def max_token_chars(tokenizer: Any) -> int | None:
    """The most characters one token of `tokenizer` can stand for (None if it cannot say)."""
    size, spell = getattr(tokenizer, "vocab_size", None), getattr(tokenizer, "id_to_token", None)
    if not isinstance(size, int) or spell is None:
        return None
    return max((len(spell(i) or "") for i in range(size)), default=0) or None


def check_prompt_chars(text: str, max_tokens: int | None, config: ServerConfig | None) -> None:
    """A 400 before tokenizing when `text` has too many characters to fit the context."""
    if config is None or config.max_model_len is None or not config.max_token_chars:
        return
    at_least = -(-len(text) // (NORMALIZER_SLACK * config.max_token_chars))
    if at_least + (max_tokens or 1) <= config.max_model_len:
        return
    if max_tokens is None:
        raise bad_request(f"the prompt has {len(text)} characters, so at least {at_least} tokens: more than "
                          f"the model's context length of {config.max_model_len} tokens",
                          code="context_length_exceeded")
    raise bad_request(f"the prompt has {len(text)} characters, so at least {at_least} tokens, and max_tokens "
                      f"is {max_tokens}, which exceeds the model's context length of {config.max_model_len} "
                      "tokens", param="max_tokens", code="context_length_exceeded")


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


def render_chat(tokenizer: Any, messages: list[dict], tools: list[ToolDecl], config: ServerConfig | None = None,
                max_tokens: int | None = None) -> tuple[str, list[int]]:
    """(prompt text, prompt token ids) for a chat; a template failure or a text too long for
    the context (with `max_tokens`, when the client set it) is a 400.

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
    check_prompt_chars(text, max_tokens, config)
    # The template already spells out BOS and role markers as text.
    return text, tokenizer.encode(text, add_special_tokens=False)


def render_text(tokenizer: Any, prompt: str, config: ServerConfig | None = None,
                max_tokens: int | None = None) -> tuple[str, list[int]]:
    """A raw completion prompt, with the tokenizer's usual special tokens (BOS)."""
    check_prompt_chars(prompt, max_tokens, config)
    return prompt, tokenizer.encode(prompt, add_special_tokens=True)


def check_context(prompt_ids: list[int], max_tokens: int, max_model_len: int | None) -> None:
    if max_model_len is not None and len(prompt_ids) + max_tokens > max_model_len:
        raise bad_request(f"the prompt has {len(prompt_ids)} tokens and max_tokens is {max_tokens}, "
                          f"which exceeds the model's context length of {max_model_len} tokens",
                          param="max_tokens", code="context_length_exceeded")
