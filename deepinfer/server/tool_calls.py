"""Tool calls: the constraint that generates them, and parsing them back out.

With `tool_choice: auto` the model may answer or call; calls are written in
the Hermes/Qwen format that ChatML templates teach:

    <tool_call>
    {"name": "get_weather", "arguments": {...}}
    </tool_call>

(several, newline-separated, when parallel calls are allowed). The answer is
free text that never contains the opener `<tool_call>` (optionally followed by
calls), or, when the request also asks for structured output, that constraint.

A forced call (`required`, a named tool, Anthropic `any`/`tool`) needs no
opener: one bare `{"name": ..., "arguments": ...}` object, or a JSON array of
one or more of them when parallel calls are allowed; a named tool is called
exactly once.

Every call's `arguments` are generated under its tool's `parameters` schema,
compiled as that schema is in `response_format` (fail closed: a keyword the
compiler cannot enforce is a 400, whatever the tool's `strict` says), so
whenever the model opens a call, what follows is a valid call. The grammar is
composed by `deepinfer.constraints.compose.tool_calls`. The tool-call format of
the model's own chat template is not detected: this one is what the constraint
generates for every model. Where calls may be made (not forced), DeepSeek-V4's
own DSML block written in the free text is parsed too (`tool_calls_dsml.py`):
its arguments are not constrained, so a call whose arguments break the tool's
schema stays text. Knows nothing about HTTP; errors are
`APIError`s naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from deepinfer.constraints import compose
from deepinfer.constraints.compose import HERMES, CallFormat
from deepinfer.constraints.errors import ConstraintError
from deepinfer.server.constraint_spec import single_constraint
from deepinfer.server.errors import APIError, bad_request
from deepinfer.server.tool_calls_dsml import DSML_CALLS_OPEN, parse_dsml_calls
from deepinfer.server.validation import check_schema
from deepinfer.types import ChoiceResult, ConstraintSpec, Job, ToolDecl


def call_format(tool_mode: str) -> CallFormat:
    return compose.call_format(forced=tool_mode == "forced")


def find_tool(tools: list[ToolDecl], name: str, source: str) -> ToolDecl:
    for tool in tools:
        if tool.name == name:
            return tool
    known = ", ".join(t.name for t in tools) or "none"
    raise bad_request(f"'{source}' names tool '{name}', which is not among the declared tools ({known})",
                      param=source)


def _tool_arguments(tool: ToolDecl, index: int, whitespace: str | None) -> compose.ToolArguments:
    """A tool's arguments grammar, compiled as its schema would be in `response_format`."""
    source = tool.source or f"tools[{index}]"
    check_schema(ConstraintSpec("json_schema", tool.parameters, source))
    try:
        return compose.ToolArguments(tool.name, compose.json_schema(tool.parameters, whitespace))
    except ConstraintError as exc:
        raise bad_request(f"'{source}': {exc}", param=source, code="invalid_constraint") from None


def tool_call_constraint(tools: list[ToolDecl], *, forced: bool, named: str | None, parallel: bool,
                         answer: ConstraintSpec | None = None, whitespace: str | None = None,
                         source: str = "tools") -> ConstraintSpec:
    """The constraint of this request's output when tools may (or must) be called."""
    if named is not None:
        tools, parallel = [find_tool(tools, named, "tool_choice")], False
    arguments = [_tool_arguments(tool, i, whitespace) for i, tool in enumerate(tools)]
    lowered = None
    if answer is not None and not forced:
        try:
            lowered = compose.lower(answer.kind, answer.value, answer.syntax, whitespace)
        except ConstraintError as exc:
            raise bad_request(f"'{answer.source}': {exc}", param=answer.source, code="invalid_constraint") from None
    grammar = compose.tool_calls(arguments, forced=forced, parallel=parallel, answer=lowered,
                                 whitespace=whitespace)
    what = "tool_choice" if forced else (f"tools + {answer.source}" if answer else source)
    return ConstraintSpec("ir", grammar, what)


@dataclass
class ParsedCalls:
    content: str  # text before the first call, trailing whitespace removed ("" if none)
    calls: list[tuple[str, dict[str, Any]]]


def parse_tool_calls(text: str, tools: list[ToolDecl], fmt: CallFormat = HERMES,
                     partial: bool = False) -> ParsedCalls | None:
    """The calls in generated text: None if there are none or they do not parse.

    `partial`: the text was cut off (max_tokens); keep the complete calls before the cut.
    """
    dsml = text.find(DSML_CALLS_OPEN) if fmt.trigger else -1
    if dsml >= 0 and not 0 <= text.find(fmt.trigger) < dsml:  # DeepSeek-V4's own call block
        found = parse_dsml_calls(text, {t.name: t.parameters for t in tools}, partial)
        return ParsedCalls(*found) if found else None
    start = text.find(fmt.trigger) if fmt.trigger else len(text) - len(text.lstrip())
    if start < 0:
        return None
    if not fmt.trigger and text.startswith("[", start):
        return _parse_array(text, start, tools, partial)
    names = {t.name for t in tools}
    decoder = json.JSONDecoder()
    closer = fmt.suffix.strip()
    calls, pos = [], start
    while (pos := _skip_space(text, pos)) < len(text):
        call, end = None, None
        if text.startswith(fmt.trigger, pos):
            try:
                value, end = decoder.raw_decode(text, _skip_space(text, pos + len(fmt.trigger)))
                call = _call(value, names)
            except json.JSONDecodeError:
                pass
        if call is not None and closer:
            end = _skip_space(text, end)
            end = end + len(closer) if text.startswith(closer, end) else None
        if call is None or end is None:
            if partial:
                break
            return None
        calls.append(call)
        pos = end
    return ParsedCalls(text[:start].rstrip(), calls) if calls else None


def _parse_array(text: str, start: int, tools: list[ToolDecl], partial: bool) -> ParsedCalls | None:
    """`[call, call, ...]` (forced parallel calls)."""
    names = {t.name for t in tools}
    decoder = json.JSONDecoder()
    calls, pos = [], start + 1
    while True:
        try:
            value, pos = decoder.raw_decode(text, _skip_space(text, pos))
        except json.JSONDecodeError:
            value = None
        call = _call(value, names)
        if call is None:
            break
        calls.append(call)
        pos = _skip_space(text, pos)
        if text.startswith("]", pos) and not text[pos + 1:].strip():
            return ParsedCalls("", calls)
        if not text.startswith(",", pos):
            break
        pos += 1
    return ParsedCalls("", calls) if partial and calls else None


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _call(value: Any, names: set[str]) -> tuple[str, dict] | None:
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    args = value.get("arguments", value.get("parameters"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    return (value["name"], args) if isinstance(args, dict) else None


def request_constraint(candidates: list[ConstraintSpec], tools: list[ToolDecl], mode: str, named: str | None,
                       parallel: bool, whitespace: str | None) -> ConstraintSpec | None:
    """The one constraint of a request, given its tool mode and its other constraint fields.

    A forced call plus another constraint is two constraints (a 400); `auto`
    combines: the answer follows the other constraint, or the model calls a tool.
    """
    if mode != "none":
        names = [t.name for t in tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise bad_request(f"tool names must be unique, but '{twice[0]}' is declared {names.count(twice[0])} "
                              "times (a call could not say which one it means)", param="tools")
    if mode == "forced":
        single_constraint(candidates + [ConstraintSpec("grammar", "", "tool_choice")])
        return tool_call_constraint(tools, forced=True, named=named, parallel=parallel, whitespace=whitespace)
    answer = single_constraint(candidates)
    if mode == "auto":
        if answer is not None:
            check_schema(answer)
        return tool_call_constraint(tools, forced=False, named=None, parallel=parallel, answer=answer,
                                    whitespace=whitespace)
    return answer


def resolve_tool_calls(job: Job, result: ChoiceResult) -> None:
    """Parse a finished choice's calls out of its text (once); `result.text` keeps the text before them.

    A choice cut off by max_tokens (or a stop sequence) keeps the calls it completed
    (its finish reason stays); the cut-off call is dropped.
    """
    if result.resolved or job.tool_mode == "none" or result.finish_reason not in ("stop", "length", None):
        return
    result.resolved = True
    cut = result.finish_reason == "length" or result.stop_sequence is not None  # ended mid-output
    parsed = parse_tool_calls(result.text, job.tools, call_format(job.tool_mode), partial=cut)
    if parsed is None:
        if job.tool_mode == "forced" and not cut:
            raise APIError(500, "the forced tool call did not parse as a call of a declared tool")
        return
    result.text, result.tool_calls = parsed.content, parsed.calls


class TextGate:
    """Streams the free text of a tool-capable choice as it is generated.

    Text goes out as soon as it cannot be the start of a call: a tail that could
    still become an opener (`<tool_` ..., or DeepSeek-V4's DSML block opener) or
    trailing whitespace is held back. Once an opener appears, the rest is call
    text, sent parsed at the end.
    """

    def __init__(self, fmt: CallFormat = HERMES) -> None:  # BARE (forced calls): nothing is text
        self.triggers = (fmt.trigger, DSML_CALLS_OPEN) if fmt.trigger else ("",)
        self.text = ""
        self.sent = 0
        self.closed = False

    def push(self, text: str) -> str:
        self.text += text
        if self.closed:
            return ""
        found = [self.text.find(t, max(0, self.sent - len(t))) for t in self.triggers]
        start = min((f for f in found if f >= 0), default=-1)
        if start >= 0:
            self.closed = True
            end = len(self.text[:start].rstrip())
        else:
            hold = max(next((k for k in range(min(len(t) - 1, len(self.text)), 0, -1)
                             if self.text.endswith(t[:k])), 0) for t in self.triggers)
            end = len(self.text) - hold
            end = len(self.text[:end].rstrip())
        out = self.text[self.sent:end] if end > self.sent else ""
        self.sent = max(self.sent, end)
        return out

    def finish(self, has_calls: bool) -> str:
        """What is left to send as text once the choice is over (nothing of a parsed call)."""
        if has_calls:
            return ""
        out = self.text[self.sent:]
        self.sent = len(self.text)
        return out
