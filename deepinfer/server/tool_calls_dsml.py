"""DeepSeek-V4's tool calls (DSML) parsed out of generated text, into (name, arguments) calls.

V4 writes calls after its answer's text as the block `deepinfer.tokenizer.deepseek_v4_chat`
renders:

    <｜DSML｜tool_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜tool_calls>

`string="true"` values are the text as it is, the others JSON. A block that does not parse (an
unknown tool, a bad JSON value, a parameter named twice, an unclosed tag, arguments that break
the tool's `parameters` schema: V4's block is written in free text, not under a constraint) is
not a call: the text stays the answer, as a Hermes call that does not parse does. Knows
nothing about HTTP.
"""

from __future__ import annotations

import json
import re
from typing import Any

from deepinfer.tokenizer.deepseek_v4_chat import DSML, DSML_CALLS_CLOSE, DSML_CALLS_OPEN

_INVOKE = re.compile(rf'<{DSML}invoke name="([^"]*)">\n(.*?)</{DSML}invoke>\n?', re.DOTALL)
_PARAM = re.compile(rf'<{DSML}parameter name="([^"]*)" string="(true|false)">(.*?)</{DSML}parameter>\n?',
                    re.DOTALL)


def _arguments(body: str) -> dict[str, Any] | None:
    args: dict[str, Any] = {}
    pos = 0
    for match in _PARAM.finditer(body):
        if body[pos:match.start()].strip():
            return None  # text between parameters: not V4's format
        name, string, value = match.groups()
        if name in args:
            return None
        if string == "true":
            args[name] = value
        else:
            try:
                args[name] = json.loads(value)
            except json.JSONDecodeError:
                return None
        pos = match.end()
    return args if not body[pos:].strip() else None


def _follows(args: dict[str, Any], schema: Any) -> bool:
    if not isinstance(schema, dict) or not schema:
        return True  # no parameters schema: any arguments
    import jsonschema  # only when a DSML block appears (its import takes ~1 s)

    try:
        return jsonschema.validators.validator_for(schema)(schema).is_valid(args)
    except jsonschema.exceptions.SchemaError:
        return False


def parse_dsml_calls(text: str, schemas: dict[str, Any], partial: bool = False
                     ) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    """(text before the block, its calls), or None when `text` holds no block that parses.

    schemas: each declared tool's `parameters` schema by name; `partial`: the text was cut
    off, keep the complete calls of an unclosed block."""
    start = text.find(DSML_CALLS_OPEN)
    if start < 0:
        return None
    pos = start + len(DSML_CALLS_OPEN)
    calls = []
    while True:
        rest = text[pos:]
        if rest.lstrip().startswith(DSML_CALLS_CLOSE):
            if rest.lstrip()[len(DSML_CALLS_CLOSE):].strip():
                return None  # text after the block: V4 ends its turn there
            break
        match = _INVOKE.match(rest.lstrip())
        args = _arguments(match.group(2)) if match else None
        if (match is None or args is None or match.group(1) not in schemas
                or not _follows(args, schemas[match.group(1)])):
            if partial and calls:
                break
            return None
        calls.append((match.group(1), args))
        pos += len(rest) - len(rest.lstrip()) + match.end()
    return (text[:start].rstrip(), calls) if calls else None
