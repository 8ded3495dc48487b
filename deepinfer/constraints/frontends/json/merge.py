"""Merging normalized JSON Schema objects (`allOf`, `$ref` with siblings).

Owns `merge`: the conjunction of two normalized dicts (json_normalize) as one,
exactly. `additionalProperties` keeps its per-member meaning (a name one member
declares is "additional" to the other), and anything that cannot be merged
exactly raises MergeError naming the keyword. Also owns the small helpers every
normalized dict is read with (`type_set`, `canon`, `synthetic`, `property_view`).
Where each property was declared (for member order across members) is kept by
json_order. Knows nothing about IR, nor how a raw schema becomes a normalized dict.
"""

from __future__ import annotations

import json
import math
import re

from .unevaluated import EVALUATED, UNEVAL
from .order import NOT_PATTERN_AT, ORDER_KEYS, POS, follow, merge_positions, ordered
from .refs import Node

TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
_LOWER_BOUNDS = ("minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties")
# a `contains` with its own minContains / maxContains; more of them (allOf members, a negated
# `items` next to a `contains`) as (node, minContains, maxContains) in `_contains_more`
_CONTAINMENT = ("contains", "minContains", "maxContains", "_contains_more")
PP_SIDES = "_pp_sides"  # see pp_sides
MAX_PRODUCT = 64


class MergeError(ValueError):
    """(keyword pointer, message): a merge or normalization that is not exact."""

    def __init__(self, ptr: str, message: str):
        super().__init__(message)
        self.ptr = ptr


def canon(value) -> str:
    """A key that tells JSON values apart as JSON Schema equality does (1 == 1.0, 1 != true)."""
    def norm(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            return ("num", float(v)) if not isinstance(v, int) or abs(v) < 2**53 else ("int", v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        return {k: norm(x) for k, x in sorted(v.items())}
    try:
        return json.dumps(norm(value), sort_keys=True)
    finally:
        norm = None  # noqa: F841 - breaks the function <-> cell cycle (freed now, not by a GC pass)


def synthetic(schema: dict, like: Node) -> Node:
    return Node(schema, like.ptr, like.base)


def type_set(schema: dict) -> frozenset:
    """Allowed type names ("integer" alone means integral numbers only)."""
    return schema.get("type", frozenset(TYPES))


def _meet_types(a: frozenset, b: frozenset) -> frozenset:
    out = set(a & b)
    if "number" in a and "integer" in b or "integer" in a and "number" in b:
        out.add("integer")
    return frozenset(out)


def merge(a: dict | bool, b: dict | bool, where: Node) -> dict | bool:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    out = dict(a)
    for key, value in b.items():
        if key in ORDER_KEYS or key in _CONTAINMENT or key == PP_SIDES:
            continue  # merge_positions / _merge_containments below
        if key not in out:
            out[key] = value
            continue
        ptr = f"{where.ptr}/{key}"
        mine = out[key]
        if key == "type":
            out[key] = _meet_types(mine, value)
        elif key == "enum":
            keys = {canon(v) for v in value}
            out[key] = [v for v in mine if canon(v) in keys]
        elif key == "required":
            out[key] = list(dict.fromkeys(list(mine) + list(value)))
        elif key in _LOWER_BOUNDS:
            out[key] = max(mine, value)
        elif key in _UPPER_BOUNDS:
            out[key] = min(mine, value)
        elif key in ("minimum", "exclusiveMinimum"):
            out[key] = max(mine, value)
        elif key in ("maximum", "exclusiveMaximum"):
            out[key] = min(mine, value)
        elif key == "uniqueItems":
            out[key] = bool(mine) or bool(value)
        elif key in ("items", "additionalProperties", "propertyNames"):
            out[key] = both(mine, value)
        elif key == "not":
            out[key] = synthetic({"anyOf": [mine, value]}, mine)
        elif key == "anyOf":
            if len(mine) * len(value) > MAX_PRODUCT:
                raise MergeError(ptr, "too many anyOf combinations in allOf")
            out[key] = [both(x, y) for x in mine for y in value]
        elif key in ("dependentRequired",):
            out[key] = {**mine, **{k: list(dict.fromkeys(mine.get(k, []) + v)) for k, v in value.items()}}
        elif key == "dependentSchemas":
            out[key] = {**mine, **{k: both(mine[k], v) if k in mine else v for k, v in value.items()}}
        elif key == "multipleOf" and _divides(mine, value):
            out[key] = max(mine, value)
        elif key == "multipleOf" and _positive_ints(mine, value):
            out[key] = math.lcm(mine, value)  # multiple of integers a and b <=> of lcm(a, b), exactly
        elif key == "pattern":  # both must match: the string lowering intersects them
            if value != mine:
                out["_patterns"] = [p for p in dict.fromkeys(list(out.get("_patterns", [])) + [value])
                                    if p != mine]
        elif key in ("_sources", "_not_enum", "_forbid", "_oneOfs", "_conds", "_patterns", "_not_patterns",
                     "_not_multiple_of", "_some_member"):
            out[key] = list(mine) + list(value)
        elif key == NOT_PATTERN_AT:
            out[key] = {**mine, **value}
        elif key == UNEVAL:  # one unevaluatedProperties per object level (json_unevaluated)
            if mine[0] != value[0]:
                raise MergeError(ptr, "`unevaluatedProperties` in two members that both branch is not supported")
        elif key == EVALUATED:
            out[key] = (mine[0] | value[0], mine[1] | value[1], mine[2] or value[2])
        elif key in ("properties", "patternProperties", "prefixItems"):
            pass  # handled below with the per-member views
        elif json.dumps(mine, sort_keys=True, default=id) != json.dumps(value, sort_keys=True, default=id):
            raise MergeError(ptr, f"`{key}` in several allOf members cannot be merged exactly")
    merge_positions(out, a, b)
    _merge_containments(out, a, b)
    _merge_objects(out, a, b, where)
    _merge_arrays(out, a, b)
    return out


def both(x: Node, y: Node) -> Node:
    return synthetic({"allOf": [x, y]}, x)


def all_of(nodes: list[Node]) -> Node | None:
    """One node valid where all are (None for no node: anything)."""
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else synthetic({"allOf": nodes}, nodes[0])


def _positive_ints(x, y) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (x, y))


def _divides(x, y) -> bool:
    if isinstance(x, int) and isinstance(y, int) and x > 0 and y > 0:
        return max(x, y) % min(x, y) == 0
    return False


def property_view(schema: dict, name: str) -> Node | None:
    """What a member says about property `name` (None: nothing, any value)."""
    if name in schema.get("properties", {}):
        return schema["properties"][name]
    matching = [n for p, n in schema.get("patternProperties", {}).items() if re.search(p, name)]
    if matching:
        return matching[0] if len(matching) == 1 else synthetic({"allOf": matching}, matching[0])
    return schema.get("additionalProperties")


def _merge_objects(out: dict, a: dict, b: dict, where: Node) -> None:
    first, second = list(a.get("properties", {})), list(b.get("properties", {}))
    if set(first) < set(second):  # one member declares them all: its order wins
        names = list(dict.fromkeys(second + first))
        out[POS] = follow(out.get(POS, {}), names)
    else:  # in declaration order across the members (json_order)
        names = ordered(list(dict.fromkeys(first + second)), out.get(POS, {}))
    if names:
        props = {}
        for name in names:
            views = [v for v in (property_view(a, name), property_view(b, name)) if v is not None]
            props[name] = views[0] if len(views) == 1 else both(*views)
        out["properties"] = props
    pa, pb = a.get("patternProperties"), b.get("patternProperties")
    sided = PP_SIDES in a or PP_SIDES in b or (pa and pb and (a.get("additionalProperties")
                                                             or b.get("additionalProperties")))
    if sided:
        # which schema an undeclared name takes depends on every member's patterns at once: the
        # members' (patterns, additionalProperties) are kept (json_additional splits the names)
        out[PP_SIDES] = pp_sides(a) + pp_sides(b)
    if sided or (pa and pb):  # a name takes every matching pattern of both
        pa, pb = pa or {}, pb or {}
        out["patternProperties"] = {p: both(pa[p], pb[p]) if p in pa and p in pb else pa.get(p) or pb[p]
                                    for p in dict.fromkeys(list(pa) + list(pb))}
    elif pa or pb:
        mine, other = (pa, b) if pa else (pb, a)
        extra = other.get("additionalProperties")
        if extra is not None and any(re.search(p, name) for p in mine for name in other.get("properties", {})):
            # a name the other member declares takes its pattern schema but not that member's
            # additionalProperties: the sides keep them apart (json_additional), as above
            out[PP_SIDES] = pp_sides(a) + pp_sides(b)
            out["patternProperties"] = dict(mine)
        else:  # every name a pattern matches is undeclared there: its additionalProperties applies
            out["patternProperties"] = {p: both(n, extra) if extra is not None else n for p, n in mine.items()}


def pp_sides(d: dict) -> list[tuple]:
    """(patternProperties, additionalProperties or None) of each allOf member behind d: an
    undeclared name takes, from every member, its matching patterns' schemas, or that member's
    additionalProperties when none matches."""
    if PP_SIDES in d:
        return list(d[PP_SIDES])
    return [(dict(d.get("patternProperties", {})), d.get("additionalProperties"))]


def _merge_arrays(out: dict, a: dict, b: dict) -> None:
    pa, pb = a.get("prefixItems"), b.get("prefixItems")
    if not (pa or pb):
        return
    pa, pb = pa or [], pb or []
    merged = []
    for i in range(max(len(pa), len(pb))):
        x = pa[i] if i < len(pa) else a.get("items")
        y = pb[i] if i < len(pb) else b.get("items")
        parts = [n for n in (x, y) if n is not None]
        merged.append(parts[0] if len(parts) == 1 else both(*parts))
    out["prefixItems"] = merged


def containments(d: dict) -> list[tuple]:
    """(contains node, minContains, maxContains or None) of every `contains` a normalized dict
    holds: min/maxContains belong to their own `contains` (without one they mean nothing)."""
    first = [(d["contains"], d.get("minContains", 1), d.get("maxContains"))] if "contains" in d else []
    return first + list(d.get("_contains_more", []))


def _merge_containments(out: dict, a: dict, b: dict) -> None:
    found = containments(a) + containments(b)
    for key in _CONTAINMENT:
        out.pop(key, None)
    if not found:
        return
    (node, low, high), more = found[0], found[1:]
    out["contains"] = node
    if low != 1:
        out["minContains"] = low
    if high is not None:
        out["maxContains"] = high
    if more:
        out["_contains_more"] = more
