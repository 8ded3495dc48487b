"""One constraint per request: collect the candidates, refuse two.

Every protocol offers several places to ask for structured output (OpenAI
`response_format`, vLLM `structured_outputs`, SGLang `regex`/`ebnf`, forced
tool calls ...). The translators gather every one the request used as a
`ConstraintSpec` naming its source field; `single_constraint` refuses more
than one (tool calls are composed with them in `tool_calls.py`). Compilation
(and its 400s) is `validation.py`'s job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from deepinfer.server.errors import bad_request

Kind = Literal["json_schema", "regex", "grammar", "ir"]

_REGEX_SPECIALS = set(".^$*+?{}[]\\|()")


@dataclass(frozen=True)
class ConstraintSpec:
    """What to compile: a JSON Schema (dict), a regex, a grammar text or a composed IR grammar."""

    kind: Kind
    value: Any
    source: str  # the request field that asked for it, for error messages
    syntax: str = "lark"  # grammars only: "lark" or "gbnf"
    strict: bool = False  # JSON Schema only: OpenAI-style strict mode requested


@dataclass(frozen=True)
class ToolDecl:
    """A function tool, whatever protocol declared it."""

    name: str
    description: str | None
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    strict: bool = False
    source: str | None = None  # the request field of its parameters schema, for error messages


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


def _structural_tag(value: Any, source: str, whitespace: str | None) -> ConstraintSpec:
    from pydantic import ValidationError

    from deepinfer.server.errors import from_validation_error
    from deepinfer.server.protocol.openai import ResponseFormatStructuralTag
    from deepinfer.server.structural_tag import structural_tag_spec

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise bad_request(f"'{source}' is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                              param=source) from None
    if not isinstance(value, dict):
        raise bad_request(f"'{source}' must be a structural tag object", param=source)
    try:
        fmt = ResponseFormatStructuralTag.model_validate({"type": "structural_tag", **value})
    except ValidationError as exc:
        raise bad_request(f"'{source}': {from_validation_error(exc).message}", param=source) from None
    return structural_tag_spec(fmt, source, whitespace)


def structured_outputs_spec(so, source: str = "structured_outputs",
                            whitespace: str | None = None) -> ConstraintSpec | None:
    """vLLM `structured_outputs`: exactly one of json / regex / choice / grammar."""
    if so is None:
        return None
    if so.whitespace_pattern is not None:
        raise bad_request(f"'{source}.whitespace_pattern' is not supported (whitespace in JSON is "
                          "bounded by the compiler)", param=f"{source}.whitespace_pattern")
    found = []
    if so.json_ is not None:
        found.append(ConstraintSpec("json_schema", schema_from_json_field(so.json_, f"{source}.json"),
                                    f"{source}.json"))
    if so.regex is not None:
        found.append(ConstraintSpec("regex", so.regex, f"{source}.regex"))
    if so.choice is not None:
        found.append(regex_for_choices(so.choice, f"{source}.choice"))
    if so.grammar is not None:
        found.append(ConstraintSpec("grammar", so.grammar, f"{source}.grammar",
                                    syntax=grammar_syntax(so.grammar)))
    if so.json_object:
        found.append(json_object_spec(f"{source}.json_object"))
    if so.structural_tag is not None:
        found.append(_structural_tag(so.structural_tag, f"{source}.structural_tag", whitespace))
    if not found:
        raise bad_request(f"'{source}' must set one of json, regex, choice, grammar, json_object, "
                          "structural_tag", param=source)
    return single_constraint(found)


def extra_field_specs(req, whitespace: str | None = None) -> list[ConstraintSpec]:
    """Constraints from the vLLM/SGLang extra fields shared by every protocol."""
    specs = []
    so = structured_outputs_spec(req.structured_outputs, whitespace=whitespace)
    if so is not None:
        specs.append(so)
    if req.regex is not None:
        specs.append(ConstraintSpec("regex", req.regex, "regex"))
    if req.ebnf is not None:
        specs.append(ConstraintSpec("grammar", req.ebnf, "ebnf", syntax=grammar_syntax(req.ebnf)))
    return specs
