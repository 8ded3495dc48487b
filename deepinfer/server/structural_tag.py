"""`response_format: {"type": "structural_tag", ...}` (vLLM / SGLang / xgrammar) as one grammar.

Free text, in which every occurrence of a trigger starts one of the tagged
structures: `begin`, a JSON value under the structure's schema, `end`; then
free text again. Two spellings are accepted:

- the original one: `{"structures": [{"begin", "schema", "end"}], "triggers": [...]}`;
- xgrammar's `format` object of type `triggered_tags`: `{"triggers", "tags": [{"begin",
  "content": {"type": "json_schema", "json_schema": {...}}, "end"}], "at_least_one",
  "stop_after_first"}`. Other `format` types are a 400 naming them.

Every `begin` must start with a trigger (otherwise the structure could never
be entered); schemas are compiled strictly (fail closed). The grammar itself
is composed by `deepinfer.constraints.compose.triggered_tags`; this module
reads the request's spelling and names the field of every refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from deepinfer.constraints import compose
from deepinfer.constraints.errors import ConstraintError
from deepinfer.server.errors import bad_request, from_validation_error
from deepinfer.server.protocol.openai import ResponseFormatStructuralTag
from deepinfer.server.validation import check_schema
from deepinfer.types import ConstraintSpec


@dataclass(frozen=True)
class Tag:
    begin: str
    schema: Any
    end: str
    source: str  # the request field of this tag, for error messages


def structural_tag_spec(fmt, source: str, whitespace: str | None) -> ConstraintSpec:
    """The constraint of a parsed `ResponseFormatStructuralTag`."""
    if fmt.format is not None:
        if fmt.structures is not None or fmt.triggers is not None:
            raise bad_request(f"'{source}': give either 'format' or 'structures' + 'triggers', not both",
                              param=f"{source}.format")
        tags, triggers, at_least_one, stop_after_first = _triggered_tags(fmt.format, f"{source}.format")
    else:
        if not fmt.structures or not fmt.triggers:
            raise bad_request(f"'{source}' of type structural_tag needs non-empty 'structures' and "
                              "'triggers' (or a 'format' object)", param=source)
        tags = [Tag(s.begin, s.schema_, s.end, f"{source}.structures[{i}]") for i, s in enumerate(fmt.structures)]
        triggers, at_least_one, stop_after_first = fmt.triggers, False, False
    return build(tags, triggers, source, whitespace, at_least_one, stop_after_first)


def structural_tag_field(value: Any, source: str, whitespace: str | None) -> ConstraintSpec:
    """A structural tag given as an object or JSON text outside `response_format` (vLLM's
    `structured_outputs.structural_tag`)."""
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


def _triggered_tags(obj: dict, source: str):
    kind = obj.get("type")
    if kind != "triggered_tags":
        raise bad_request(f"'{source}.type' {kind!r} is not supported; this server implements the "
                          "'triggered_tags' structural tag format (and the 'structures' + 'triggers' form)",
                          param=f"{source}.type")
    known = {"type", "triggers", "tags", "at_least_one", "stop_after_first"}
    unknown = sorted(set(obj) - known)
    if unknown:
        raise bad_request(f"unknown field '{source}.{unknown[0]}' (not supported; refusing rather than "
                          "ignoring it)", param=f"{source}.{unknown[0]}")
    tags = []
    for i, tag in enumerate(obj.get("tags") or []):
        where = f"{source}.tags[{i}]"
        content = tag.get("content") if isinstance(tag, dict) else None
        if not isinstance(content, dict) or content.get("type") != "json_schema" or set(tag) - {"begin", "content", "end", "type"}:
            raise bad_request(f"'{where}' must be {{begin, content: {{type: json_schema, json_schema}}, end}}; "
                              "other tag contents are not supported", param=where)
        if not isinstance(tag.get("begin"), str) or not isinstance(tag.get("end"), str):
            raise bad_request(f"'{where}.begin' and '{where}.end' must be strings", param=where)
        tags.append(Tag(tag["begin"], content.get("json_schema"), tag["end"], where))
    triggers = obj.get("triggers")
    if not tags or not isinstance(triggers, list) or not triggers or not all(isinstance(t, str) for t in triggers):
        raise bad_request(f"'{source}' needs non-empty 'tags' and 'triggers' (a list of strings)", param=source)
    return tags, triggers, bool(obj.get("at_least_one")), bool(obj.get("stop_after_first"))


def build(tags: list[Tag], triggers: list[str], source: str, whitespace: str | None,
          at_least_one: bool = False, stop_after_first: bool = False) -> ConstraintSpec:
    if any(t == "" for t in triggers):
        raise bad_request(f"'{source}': triggers must not be empty strings", param=f"{source}.triggers")
    structures = []
    for tag in tags:
        if not any(tag.begin.startswith(t) for t in triggers):
            raise bad_request(f"'{tag.source}.begin' {tag.begin!r} does not start with any trigger "
                              f"({', '.join(map(repr, triggers))}), so it could never be generated",
                              param=f"{tag.source}.begin")
        spec = ConstraintSpec("json_schema", tag.schema, f"{tag.source}.schema")
        check_schema(spec)
        try:
            body = compose.json_schema(tag.schema, whitespace)
        except ConstraintError as exc:
            raise bad_request(f"'{spec.source}': {exc}", param=spec.source, code="invalid_constraint") from None
        structures.append(compose.TaggedStructure(tag.begin, body, tag.end))
    grammar = compose.triggered_tags(structures, triggers, at_least_one=at_least_one,
                                     stop_after_first=stop_after_first)
    return ConstraintSpec("ir", grammar, source)
