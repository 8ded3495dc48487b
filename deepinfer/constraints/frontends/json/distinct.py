"""Distinct array items: a schema rewrite that stops degenerate repetition.

Owns `distinct_items(schema)`: the same schema with `uniqueItems: true` on every array
sub-schema (where `type` says array, or `items`/`prefixItems` is present). Why: a small model
often loops on an array item, writing the same element until the token budget runs out; with the
items distinct, an identical element cannot be written again, and the constraint's own closing
moves stay open. The rewritten schema is stricter (every value it accepts the original accepts),
so outputs still validate against the original. `deepinfer extract` applies it by default.
Knows nothing about lowering: it rewrites the document only.
"""

from __future__ import annotations

import copy

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = ("items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
               "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


def distinct_items(schema):
    """A copy of `schema` whose arrays have distinct items (`uniqueItems: true`)."""
    out = copy.deepcopy(schema)
    _mark(out)
    return out


def _is_array(d: dict) -> bool:
    kind = d.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind) or "items" in d or "prefixItems" in d


def _mark(node) -> None:
    if not isinstance(node, dict):
        return
    if _is_array(node) and "uniqueItems" not in node:
        node["uniqueItems"] = True  # (only arrays are constrained by it: safe on mixed types)
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            for sub in node[key].values():
                _mark(sub)
    for key in _SCHEMA_ONE:
        _mark(node.get(key))
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            for sub in node[key]:
                _mark(sub)
