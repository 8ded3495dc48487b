"""Normalizing JSON Schema objects and merging them (`allOf`, `$ref` with siblings).

Owns the canonical form the lowering works on: `$ref`s followed, `allOf`
folded in, draft differences removed (draft-04 boolean `exclusive*`, draft-07
array `items` + `additionalItems` vs `prefixItems`, `dependencies` split into
`dependentRequired`/`dependentSchemas`, `const` as a one-value `enum`), and
sub-schemas wrapped as `Node`s so they keep their pointer and base URI.
Merging is exact: `additionalProperties` keeps its per-member meaning (a name
one member declares is "additional" to the other), and anything that cannot be
merged exactly raises MergeError naming the keyword. Where each property was
declared (for member order across members) is kept by json_order. Knows nothing about IR.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .json_order import (ANY_OF_POS, COND_POS, ONE_OF_POS, ORDER_KEYS, POS, follow, merge_positions, ordered,
                         shifted)
from .json_refs import Node, Refs

ANNOTATIONS = {"title", "description", "default", "examples", "example", "$comment", "$schema", "$id",
               "id", "$anchor", "$dynamicAnchor", "definitions", "$defs", "deprecated", "readOnly",
               "writeOnly", "contentEncoding", "contentMediaType", "contentSchema", "$vocabulary"}
VALIDATION = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
              "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "items", "prefixItems",
              "additionalItems", "contains", "minContains", "maxContains", "maxItems", "minItems",
              "uniqueItems", "properties", "patternProperties", "additionalProperties", "propertyNames",
              "maxProperties", "minProperties", "required", "dependentRequired", "dependentSchemas",
              "dependencies", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
              "$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}
TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
_LOWER_BOUNDS = ("minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties", "maxContains")
MAX_MERGE_DEPTH = 40
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


class Normalizer:
    def __init__(self, refs: Refs, ignored: frozenset = frozenset()):
        self.refs = refs
        self.ignored = ignored  # keywords the document's draft does not have (see Lowerer)

    def normalize(self, node: Node, depth: int = 0) -> dict | bool:
        """The canonical dict of a schema (True/False for boolean schemas)."""
        s = node.schema
        if isinstance(s, bool):
            return s
        if not isinstance(s, dict):
            raise MergeError(node.ptr, f"a schema must be an object or a boolean, not {type(s).__name__}")
        if depth > MAX_MERGE_DEPTH:
            raise MergeError(node.ptr, "$ref/allOf chain too deep (a schema that includes itself)")
        out: dict[str, Any] = {}
        members: list[tuple[Node, tuple]] = []  # (member, its position prefix: see json_order)
        for k, (key, value) in enumerate(s.items()):
            if key not in VALIDATION or key in self.ignored:
                continue
            if key == "$ref":
                members.append((self.refs.resolve(value, node.base), (k,)))
            elif key == "allOf":
                members.extend((node.child("allOf", i), (k, i)) for i in range(len(value)))
            else:
                self._put(out, node, key, value)
                _record_position(out, key, k)
        self._finish(out, node)
        out["_sources"] = [node]
        result: dict | bool = out
        for member, prefix in members:
            other = shifted(self.normalize(member, depth + 1), prefix)
            result = merge(result, other, member)
            if result is False:
                return False
        return result

    def _put(self, out: dict, node: Node, key: str, value) -> None:
        ptr = f"{node.ptr}/{key}"
        if key in ("properties", "patternProperties", "dependentSchemas"):
            if not isinstance(value, dict):
                raise MergeError(ptr, f"{key} must be an object")
            out[key] = {name: node.child(key, name) for name in value}
        elif key in ("anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise MergeError(ptr, f"{key} must be a non-empty array")
            branches = [node.child(key, i) for i in range(len(value))]
            if key == "anyOf":
                out[key] = branches
            else:  # a list of oneOfs, so that allOf members with one each can be merged
                out["_oneOfs"] = [branches]
        elif key == "if":
            s = node.schema
            out["_conds"] = [(node.child("if"), node.child("then") if "then" in s else None,
                              node.child("else") if "else" in s else None)]
        elif key in ("then", "else"):
            pass  # without `if` they have no effect; with it they are taken above
        elif key == "items" and isinstance(value, list):  # draft-07 tuple form
            out["prefixItems"] = [node.child(key, i) for i in range(len(value))]
            out["_tuple"] = True
        elif key == "prefixItems":
            out[key] = [node.child(key, i) for i in range(len(value))]
        elif key in ("items", "additionalItems", "additionalProperties", "contains", "propertyNames",
                     "not"):
            out[key] = node.child(key)
        elif key == "dependencies":
            for name, dep in value.items():
                if isinstance(dep, list):
                    out.setdefault("dependentRequired", {})[name] = list(dep)
                else:
                    out.setdefault("dependentSchemas", {})[name] = node.child(key, name)
        elif key in ("const", "enum"):
            values = [value] if key == "const" else list(value) if isinstance(value, list) else None
            if values is None:
                raise MergeError(ptr, "enum must be an array")
            if "enum" in out:
                keep = {canon(v) for v in out["enum"]}
                values = [v for v in values if canon(v) in keep]
            out["enum"] = values
        elif key == "type":
            names = [value] if isinstance(value, str) else list(value)
            bad = [t for t in names if t not in TYPES]
            if bad:
                raise MergeError(ptr, f"unknown type {bad[0]!r}")
            out["type"] = _types(names)
        else:
            out[key] = value

    def _finish(self, out: dict, node: Node) -> None:
        """Draft differences: boolean exclusive*, items/additionalItems."""
        for excl, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(out.get(excl), bool):
                flag = out.pop(excl)
                if flag and bound in out:
                    out[excl] = out.pop(bound)
        if out.pop("_tuple", False):
            rest = out.pop("additionalItems", None)
            out.pop("items", None)
            if rest is not None:
                out["items"] = rest
        else:
            out.pop("additionalItems", None)  # without tuple items it has no effect


def _record_position(out: dict, key: str, k: int) -> None:
    """Where this schema object declares its properties and branches (key index k)."""
    if key == "properties" and "properties" in out:
        out[POS] = {name: (k, j) for j, name in enumerate(out["properties"])}
    elif key == "oneOf":
        out[ONE_OF_POS] = [(out["_oneOfs"][0], (k,))]
    elif key == "anyOf":
        out[ANY_OF_POS] = (k,)
    elif key == "if":
        out[COND_POS] = [(out["_conds"][0], (k,))]


def _types(names) -> frozenset:
    return frozenset(names)


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
        if key in ORDER_KEYS:
            continue  # merge_positions below
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
        elif key in ("items", "additionalProperties", "propertyNames", "contains"):
            if key == "contains":
                raise MergeError(ptr, "two `contains` in one allOf cannot be merged exactly")
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
                     "_not_multiple_of"):
            out[key] = list(mine) + list(value)
        elif key in ("properties", "patternProperties", "prefixItems"):
            pass  # handled below with the per-member views
        elif json.dumps(mine, sort_keys=True, default=id) != json.dumps(value, sort_keys=True, default=id):
            raise MergeError(ptr, f"`{key}` in several allOf members cannot be merged exactly")
    merge_positions(out, a, b)
    _merge_objects(out, a, b, where)
    _merge_arrays(out, a, b)
    return out


def both(x: Node, y: Node) -> Node:
    return synthetic({"allOf": [x, y]}, x)


def _positive_ints(x, y) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (x, y))


def _divides(x, y) -> bool:
    if isinstance(x, int) and isinstance(y, int) and x > 0 and y > 0:
        return max(x, y) % min(x, y) == 0
    return False


def _view(schema: dict, name: str) -> Node | None:
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
            views = [v for v in (_view(a, name), _view(b, name)) if v is not None]
            props[name] = views[0] if len(views) == 1 else both(*views)
        out["properties"] = props
    pa, pb = a.get("patternProperties"), b.get("patternProperties")
    if pa and pb:
        if a.get("additionalProperties") or b.get("additionalProperties"):
            raise MergeError(f"{where.ptr}/patternProperties",
                             "patternProperties in several allOf members cannot be merged exactly")
        # no additionalProperties on either side: a name takes every matching pattern of both
        out["patternProperties"] = {p: both(pa[p], pb[p]) if p in pa and p in pb else pa.get(p) or pb[p]
                                    for p in dict.fromkeys(list(pa) + list(pb))}
    elif pa or pb:
        mine, other = (pa, b) if pa else (pb, a)
        extra = other.get("additionalProperties")
        out["patternProperties"] = {p: both(n, extra) if extra is not None else n for p, n in mine.items()}


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
