"""DeepSeek-V4's chat format: a conversation rendered to the prompt text V4 was trained on.

V4 checkpoints ship no jinja `chat_template` (tokenizer_config.json has none); the format is
defined by the Python encoder beside the weights (`encoding/encoding_dsv4.py`). This module
renders the same text for OpenAI-shaped messages:

    <｜begin▁of▁sentence｜>{system}[\\n\\n## Tools ...]<｜User｜>{user}<｜Assistant｜></think>{answer}<｜end▁of▁sentence｜>

- chat mode (the default) opens every answer with `</think>` (no reasoning); thinking mode
  (`thinking=True`) opens the answer being generated with `<think>`, and keeps earlier answers'
  reasoning only when tools are declared (V4 drops it otherwise);
- tool results (role "tool") have no role of their own: consecutive tool and user messages
  become one user turn of parts joined by a blank line, each result as
  `<tool_result>...</tool_result>`, ordered as the assistant's calls were;
- an assistant's tool calls follow its content as a DSML block (`DSML_CALLS_OPEN` ... ), one
  `invoke` per call and one `parameter` per argument: strings as they are (`string="true"`),
  every other value as JSON (`string="false"`). `deepinfer.server` parses that block back.
Knows nothing about token ids.
"""

from __future__ import annotations

import json
from typing import Any

from deepinfer.tokenizer.chat import ChatTemplateError

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
USER, ASSISTANT = "<｜User｜>", "<｜Assistant｜>"
THINK, END_THINK = "<think>", "</think>"
DSML = "｜DSML｜"
DSML_CALLS_OPEN, DSML_CALLS_CLOSE = f"<{DSML}tool_calls>", f"</{DSML}tool_calls>"

# The tools section of the system prompt, word for word as V4's encoder writes it.
TOOLS_SECTION = f"""## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "{DSML_CALLS_OPEN}" block like the following:

{DSML_CALLS_OPEN}
<{DSML}invoke name="$TOOL_NAME">
<{DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{DSML}parameter>
...
</{DSML}invoke>
<{DSML}invoke name="$TOOL_NAME2">
...
</{DSML}invoke>
{DSML_CALLS_CLOSE}

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by {THINK}), you MUST output your complete reasoning inside {THINK}...{END_THINK} BEFORE any tool calls or final response.

Otherwise, output directly after {END_THINK} with tool calls or final response.

### Available Tool Schemas

{{schemas}}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
"""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _text(content: Any, where: str) -> str:
    """A message's content: a string, None, or a list of text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = [p.get("text", "") if isinstance(p, dict) and p.get("type", "text") == "text" else None
                 for p in content]
        if all(isinstance(t, str) for t in texts):
            return "\n\n".join(texts)
    raise ChatTemplateError(f"{where}: content must be a string or a list of text parts")


def _arguments(call: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    function = call.get("function", call)
    name, args = function.get("name"), function.get("arguments", {})
    if not isinstance(name, str):
        raise ChatTemplateError(f"{where}: a tool call needs a function name")
    if isinstance(args, str):  # OpenAI sends the arguments as JSON text
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            args = {"arguments": args}  # as V4's encoder does with arguments that are not JSON
    if not isinstance(args, dict):
        args = {"arguments": args}
    return name, args


def _declaration(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool's function as V4 lists it; an empty description (servers fill "" for a
    missing one) is left out, as a client that sends none would have it."""
    function = tool.get("function", tool)
    return {k: v for k, v in function.items() if not (k == "description" and not v)}


def render_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """The DSML block of (name, arguments) calls, as an assistant turn writes it after its content."""
    invokes = []
    for name, args in calls:
        params = [f'<{DSML}parameter name="{key}" string="{"true" if isinstance(value, str) else "false"}">'
                  f"{value if isinstance(value, str) else _json(value)}</{DSML}parameter>"
                  for key, value in args.items()]
        invokes.append(f'<{DSML}invoke name="{name}">\n' + "\n".join(params) + f"\n</{DSML}invoke>")
    return f"{DSML_CALLS_OPEN}\n" + "\n".join(invokes) + f"\n{DSML_CALLS_CLOSE}"


def _turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as V4's turns: tool results and user messages in a row merged into one user turn."""
    turns: list[dict[str, Any]] = []
    order: dict[str, int] = {}  # tool_call_id -> position among the last assistant's calls
    for i, msg in enumerate(messages):
        role, where = msg.get("role"), f"messages[{i}]"
        if role in ("user", "tool"):
            part = _text(msg.get("content"), where)
            if role == "tool":
                part = (order.get(msg.get("tool_call_id", ""), len(order)), f"<tool_result>{part}</tool_result>")
            else:
                part = (None, part)
            if turns and turns[-1]["role"] == "user":
                turns[-1]["parts"].append(part)
            else:
                turns.append({"role": "user", "parts": [part]})
        elif role == "assistant":
            calls = [_arguments(c, where) for c in msg.get("tool_calls") or []]
            order = {c.get("id"): k for k, c in enumerate(msg.get("tool_calls") or []) if c.get("id")}
            turns.append({"role": "assistant", "content": _text(msg.get("content"), where), "calls": calls,
                          "reasoning": msg.get("reasoning_content") or ""})
        elif role in ("system", "developer"):
            turns.append({"role": "system", "content": _text(msg.get("content"), where)})
        else:
            raise ChatTemplateError(f"{where}: role {role!r} is not one of system, user, assistant, tool")
    for turn in turns:  # tool results in the order of the calls they answer, texts where they were
        if turn["role"] == "user":
            results = iter(sorted((p for p in turn["parts"] if p[0] is not None), key=lambda p: p[0]))
            turn["parts"] = [p[1] if p[0] is None else next(results)[1] for p in turn["parts"]]
    return turns


def render(messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
           add_generation_prompt: bool = True, thinking: bool = False) -> str:
    """The prompt text of `messages` (OpenAI shape) with `tools` (OpenAI function declarations)."""
    turns = _turns(messages)
    if tools:
        if not turns or turns[0]["role"] != "system":
            turns.insert(0, {"role": "system", "content": ""})
        schemas = "\n".join(_json(_declaration(t)) for t in tools)
        turns[0]["content"] += "\n\n" + TOOLS_SECTION.replace("{schemas}", schemas)
    keep_reasoning = bool(tools)  # V4 drops earlier answers' reasoning unless tools are declared
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=-1)
    out = [BOS]
    for i, turn in enumerate(turns):
        if turn["role"] == "system":
            out.append(turn["content"])
        elif turn["role"] == "assistant":
            reasoning = ""
            if thinking and (keep_reasoning or i > last_user):
                reasoning = turn["reasoning"] + END_THINK
            calls = "\n\n" + render_calls(turn["calls"]) if turn["calls"] else ""
            out.append(f"{reasoning}{turn['content']}{calls}{EOS}")
        else:
            out.append(USER + "\n\n".join(turn["parts"]))
            following = turns[i + 1]["role"] if i + 1 < len(turns) else None
            if following == "assistant" or (following is None and add_generation_prompt):
                opens = thinking and (keep_reasoning or i >= last_user)
                out.append(ASSISTANT + (THINK if opens else END_THINK))
    return "".join(out)
