"""One constraint per request: collect the candidates, refuse two.

Every protocol offers several places to ask for structured output (OpenAI
`response_format`, vLLM `structured_outputs`, SGLang `regex`/`ebnf`, forced
tool calls ...). The translators gather every one the request used as a
`ConstraintSpec` (deepinfer.types) naming its source field; `single_constraint`
refuses more than one (tool calls are composed with them in `tool_calls.py`).
The fields every protocol shares are read in `extra_fields.py`; compilation
(and its 400s) is `validation.py`'s job.
"""

from __future__ import annotations

import json
from typing import Any

from deepinfer.server.errors import bad_request
from deepinfer.types import ConstraintSpec

_REGEX_SPECIALS = set(".^$*+?{}[]\\|()")


# `json_object`: any JSON object. A context-free grammar (nesting is unbounded), with whitespace
# runs bounded so a model cannot spin on blanks until max_tokens.
JSON_OBJECT_GBNF = r"""root   ::= object
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,4}
"""


def json_object_spec(source: str) -> ConstraintSpec:
    return ConstraintSpec("grammar", JSON_OBJECT_GBNF, source, syntax="gbnf")


def single_constraint(candidates: list[ConstraintSpec]) -> ConstraintSpec | None:
    """The one constraint of a request, or a 400 naming both fields if there are two."""
    if len(candidates) > 1:
        names = ", ".join(f"'{c.source}'" for c in candidates)
        raise bad_request(f"only one constraint per request is supported, but this request sets {names}",
                          param=candidates[1].source, code="multiple_constraints")
    return candidates[0] if candidates else None


def regex_for_choices(choices: list[str], source: str) -> ConstraintSpec:
    """vLLM's `choice`: the output is exactly one of the given strings."""
    if not choices:
        raise bad_request(f"'{source}' must list at least one choice", param=source)
    escaped = ["".join("\\" + ch if ch in _REGEX_SPECIALS else ch for ch in c) for c in choices]
    return ConstraintSpec("regex", "(" + "|".join(escaped) + ")", source)


def grammar_syntax(text: str) -> str:
    """GBNF (`rule ::= ...`, also xgrammar's EBNF) or lark (`rule: ...`)."""
    return "gbnf" if "::=" in text else "lark"


def schema_from_json_field(value: Any, source: str) -> dict:
    """A schema given as an object or as a JSON string (vLLM accepts both)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise bad_request(f"'{source}' is not valid JSON: {exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}", param=source) from None
    if not isinstance(value, (dict, bool)):
        raise bad_request(f"'{source}' must be a JSON Schema object", param=source)
    return value
