"""The JSON type each validation keyword's value must have, checked where the keyword is read.

Owns `check_value(key, value, draft, ptr)`, called by json_normalize for every keyword the
declared draft validates with. A value of the wrong type is not ignored by jsonschema (the
validator this project is sound against) but applied as Python reads it: `minimum: true` is
`minimum: 1`, `uniqueItems: 1` is truthy, `exclusiveMinimum: true` outside draft-04 is a number,
`required: "ab"` requires "a" and "b". Dropping such a value, or reading it another way, would let
through instances the schema rejects, and some crash the lowering (`pattern: 5`, `maxLength:
1e400`). So they raise MergeError (a ConstraintError naming the keyword's pointer), e.g.
`/minimum: expected a number, got true`. Only the value's own shape is checked (no metaschema
validation: compile time matters); sub-schemas are checked when they are normalized. Values
jsonschema applies exactly like their canonical form are accepted: an integral float count (2.0).
Knows nothing about IR.
"""

from __future__ import annotations

import json
import math
import re

from typing import TYPE_CHECKING

from .merge import MergeError
from .refs import Node

if TYPE_CHECKING:  # pragma: no cover
    from .drafts import Draft

_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                     "minContains", "maxContains"})
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_STRINGS = frozenset({"pattern", "format"})
# keywords whose value is a schema, an array of schemas, an object of schemas (`then`/`else` only
# count next to `if`, and are checked when it lowers them)
_SCHEMA = frozenset({"additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
                     "unevaluatedItems", "unevaluatedProperties"})
_SCHEMA_ARRAYS = frozenset({"allOf", "prefixItems"})
_SCHEMA_OBJECTS = frozenset({"properties", "patternProperties", "dependentSchemas"})


def check_value(key: str, value, draft: Draft, ptr: str) -> None:
    """Raise MergeError at `ptr/key` when `value` is not of the type `key` takes in `draft`."""
    expected = _expected(key, value, draft)
    if expected is not None:
        raise MergeError(f"{ptr}/{key}", f"expected {expected}, got {_show(value)}")


def _expected(key: str, value, draft: Draft) -> str | None:
    """What `value` should have been (None when it is fine)."""
    if key in _BOUNDS:
        if draft.boolean_exclusive and key.startswith("exclusive"):
            return None  # draft-04: a modifier of minimum/maximum (json_normalize reads it as a flag)
        return None if _is_number(value) else "a number"
    if key in _COUNTS:
        ok = _is_number(value) and value >= 0 and (isinstance(value, int) or value.is_integer())
        return None if ok else "a non-negative integer"
    if key == "multipleOf":
        return None if _is_number(value) and value > 0 else "a number greater than 0"
    if key in _STRINGS:
        return None if isinstance(value, str) else "a string"
    if key == "uniqueItems":
        return None if isinstance(value, bool) else "a boolean"
    if key == "type":
        return None if isinstance(value, (str, list)) else "a type name or an array of type names"
    if key == "required":
        return None if _is_names(value) else "an array of strings"
    if key == "dependentRequired":
        ok = isinstance(value, dict) and all(_is_names(v) for v in value.values())
        return None if ok else "an object of arrays of strings"
    if key == "dependencies":
        ok = isinstance(value, dict) and all(_is_names(v) if isinstance(v, list) else _is_schema(v)
                                             for v in value.values())
        return None if ok else "an object of schemas and arrays of strings"
    if key == "items":
        if isinstance(value, list):
            if draft.name == "2020-12":
                return "a schema (an array of schemas is prefixItems in 2020-12)"
            return None if all(map(_is_schema, value)) else "a schema or an array of schemas"
        return None if _is_schema(value) else "a schema (an object or a boolean)"
    if key in _SCHEMA:
        return None if _is_schema(value) else "a schema (an object or a boolean)"
    if key in _SCHEMA_ARRAYS:
        return None if isinstance(value, list) and all(map(_is_schema, value)) else "an array of schemas"
    if key in _SCHEMA_OBJECTS:
        ok = isinstance(value, dict) and all(map(_is_schema, value.values()))
        if ok and key == "patternProperties":
            return None if all(map(_is_regex, value)) else "an object whose names are valid regexes"
        return None if ok else "an object of schemas"
    return None


def _is_schema(value) -> bool:
    return isinstance(value, (dict, bool, Node))  # a Node: a member of a synthetic allOf / not


def _is_regex(pattern: str) -> bool:
    """jsonschema runs re.search(pattern, name): a pattern `re` rejects fails validation itself."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _is_number(value) -> bool:
    """A finite JSON number (bool is not one, though Python compares it as 0/1)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _is_names(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _show(value) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
