"""Chat templates: rendering a conversation to the prompt text a model was trained on.

Templates come with model files and are untrusted code, so they run in
jinja2's ImmutableSandboxedEnvironment with the same globals and filters as
transformers' `apply_chat_template` (raise_exception, strftime_now, a tojson
that does not HTML-escape, trim_blocks/lstrip_blocks, loop controls), which is
what template authors test against. Knows nothing about token ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from deepinfer.errors import UserError


class ChatTemplateError(UserError):
    """The chat template failed to render (it raised, or the messages don't fit it)."""


def _raise_exception(message: str):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    # jinja's own tojson escapes <, >, & for HTML, which would change prompts.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _GenerationTag(jinja2.ext.Extension):
    """Accepts transformers' `{% generation %}...{% endgeneration %}` marker and renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


@lru_cache(maxsize=32)
def _compile(source: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


def _plain(value: Any) -> Any:
    """Copy the template's inputs into plain JSON types so no caller object's methods reach it."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    # Subclasses (enums, numpy scalars) carry extra methods: strip them to the base type.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


@dataclass(frozen=True)
class ChatTemplate:
    """A compiled chat template plus the special-token strings templates refer to."""

    source: str
    special_tokens: dict[str, str]  # bos_token, eos_token, ... as template variables

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True,
               tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ChatTemplateError("messages must be a list of objects with 'role' and 'content'.")
        # Drop None fields (OpenAI clients send content=None with tool calls); templates test
        # `'key' in message` and would print "None" otherwise.
        messages = [{k: v for k, v in m.items() if v is not None} for m in _plain(messages)]
        try:
            template = _compile(self.source)
        except jinja2.exceptions.TemplateSyntaxError as exc:
            raise ChatTemplateError(f"the model's chat template does not parse: line {exc.lineno}: "
                                    f"{exc.message}") from exc
        variables = {**self.special_tokens, **_plain(kwargs)}
        try:
            return template.render(messages=messages, tools=_plain(tools), documents=None,
                                   add_generation_prompt=add_generation_prompt, **variables)
        except (jinja2.exceptions.TemplateError, TypeError, ValueError) as exc:
            raise ChatTemplateError(f"the model's chat template rejected the conversation: {exc}") from exc
