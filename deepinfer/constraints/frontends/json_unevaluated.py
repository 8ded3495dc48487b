"""`unevaluatedProperties` where every evaluated property is known without branching.

A property is *evaluated* by the schema object and the members it applies in place when they
validate: `properties`, `patternProperties` and `additionalProperties` (everything), and
nested `unevaluatedProperties` (everything), through `allOf` and `$ref`, which always apply.
When nothing in that closure branches (`anyOf`, `oneOf`, `if`, dependent schemas: which of
them validate decides what is evaluated), the evaluated set is fixed, and
`unevaluatedProperties: U` is exactly one more `allOf` member: every evaluated name and
pattern declared with no constraint, and `additionalProperties: U` for the rest (the
*closer*); json_merge folds it in like any member. Where something branches, the keyword
stays in the normalized dict and json_lowerer refuses it (fail closed).

Owns the closure walk and the closer; knows nothing about IR or lowering.
"""

from __future__ import annotations

from .json_refs import Node

_BRANCHING = ("anyOf", "oneOf", "if", "dependentSchemas", "dependencies")
EVERYTHING = "everything"  # closing_member's answer when no property is left unevaluated


def closing_member(node: Node, resolve) -> Node | str | None:
    """The closer of `node` (a Node with `unevaluatedProperties`), EVERYTHING when every
    property is evaluated anyway (the keyword has no effect), or None when the evaluated set
    depends on a branch. `resolve(ref, base) -> Node` follows a `$ref`."""
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    found = _walk(node, resolve, names, patterns, set(), top=True)
    if found is None or found == EVERYTHING:
        return found
    closer = {"additionalProperties": node.schema["unevaluatedProperties"]}
    if names:
        closer["properties"] = {name: {} for name in names}
    if patterns:
        closer["patternProperties"] = {p: {} for p in patterns}
    return Node(closer, f"{node.ptr}/unevaluatedProperties", node.base, node.ref_alone)


def _walk(node: Node, resolve, names: dict, patterns: dict, seen: set, top: bool = False) -> str | None:
    """Collect what `node` and its in-place members evaluate; EVERYTHING, None (branches), or
    "" (collected)."""
    s = node.schema
    if not isinstance(s, dict):
        return ""  # true evaluates nothing; false never validates (nothing to close)
    key = (node.ptr, node.base)
    if key in seen:
        return ""
    seen.add(key)
    if "additionalProperties" in s or (not top and "unevaluatedProperties" in s):
        return EVERYTHING
    if any(k in s for k in _BRANCHING):
        return None
    for name in s.get("properties", {}) if isinstance(s.get("properties"), dict) else ():
        names.setdefault(name)
    for pattern in s.get("patternProperties", {}) if isinstance(s.get("patternProperties"), dict) else ():
        patterns.setdefault(pattern)
    members = [node.child("allOf", i) for i in range(len(s["allOf"]))] if isinstance(s.get("allOf"), list) else []
    if isinstance(s.get("$ref"), str):
        members.append(resolve(s["$ref"], node.base))
    for member in members:
        got = _walk(member, resolve, names, patterns, seen)
        if got != "":
            return got
    return ""
