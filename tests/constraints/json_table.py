"""Shared check for table-driven JSON Schema lowering tests: a row's instances are first checked
against `jsonschema` (so the table itself is right), then against the lowered grammar."""

from __future__ import annotations

import json

import jsonschema

from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema


def dump(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def check_table_row(schema, good, bad) -> None:
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for value in good:
        assert validator.is_valid(value), f"table error: {value!r} should be valid"
    for value in bad:
        assert not validator.is_valid(value), f"table error: {value!r} should be invalid"
    grammar = lower_json_schema(schema)
    for value in good:
        assert matches(grammar, dump(value)), f"valid {dump(value)} rejected by\n{grammar}"
    for value in bad:
        assert not matches(grammar, dump(value)), f"invalid {dump(value)} accepted by\n{grammar}"
