"""`unevaluatedProperties`: one more `allOf` member, or a marker the branches credit.

A property is *evaluated* by the schema object and the members it applies in place when they
validate: `properties`, `patternProperties` and `additionalProperties` (everything), and
nested `unevaluatedProperties` (everything), through `allOf` and `$ref`, which always apply.
When nothing in that closure branches (`anyOf`, `oneOf`, `if`, dependent schemas: which of
them validate decides what is evaluated), the evaluated set is fixed, and
`unevaluatedProperties: U` is exactly one more `allOf` member: every evaluated name and
pattern declared with no constraint, and `additionalProperties: U` for the rest (the
*closer*); json_merge folds it in like any member. Where something branches, the normalized
dict carries a marker instead (UNEVAL: the keyword's node; EVALUATED: what the unconditional
closure evaluates), json_composition credits each alternative with what its branch evaluates
(`credit`: the chosen oneOf branch; `if` and `then`, or `else`; a dependent schema whose member is
present; an anyOf branch, which is stricter than the keyword where several anyOf branches hold:
noted), and json_lowerer merges the closer of the alternative's evaluated set once no branch is
left (`close`). Negated branches evaluate nothing (a failed schema gives no annotations).

Owns the closure walk, the marker and the closer; knows nothing about IR or lowering.
"""

from __future__ import annotations

from .refs import Node

_BRANCHING = ("anyOf", "oneOf", "if", "dependentSchemas", "dependencies")
EVERYTHING = "everything"  # closing_member's answer when no property is left unevaluated
UNEVAL = "_uneval"         # marker: (ptr, base) of the schema whose keyword it is, and that Node
EVALUATED = "_evaluated"   # marker: (names, patterns, everything) evaluated so far


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


def mark(node: Node, resolve) -> dict:
    """The markers of `node`'s keyword where its closure branches (closing_member gave None)."""
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    found = _walk(node, resolve, names, patterns, set(), top=True, branches=False)
    return {UNEVAL: ((node.ptr, node.base), node),
            EVALUATED: (frozenset(names), frozenset(patterns), found == EVERYTHING)}


def credit(d, branch: Node | None, resolve):
    """`d` (a normalized dict, or a bool) with what `branch` evaluates added to its markers."""
    if branch is None or not isinstance(d, dict) or UNEVAL not in d:
        return d
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    found = _walk(branch, resolve, names, patterns, set(), branches=False)
    old = d[EVALUATED]
    return {**d, EVALUATED: (old[0] | frozenset(names), old[1] | frozenset(patterns),
                             old[2] or found == EVERYTHING)}


def close(d: dict) -> tuple[dict, Node | None]:
    """(d without markers, the closer Node to merge into it; None when everything is evaluated)."""
    out = {k: v for k, v in d.items() if k not in (UNEVAL, EVALUATED)}
    names, patterns, everything = d[EVALUATED]
    if everything:
        return out, None
    node = d[UNEVAL][1]
    closer = {"additionalProperties": node.schema["unevaluatedProperties"]}
    if names:
        closer["properties"] = {name: {} for name in sorted(names)}
    if patterns:
        closer["patternProperties"] = {p: {} for p in sorted(patterns)}
    return out, Node(closer, f"{node.ptr}/unevaluatedProperties", node.base, node.ref_alone)


def _walk(node: Node, resolve, names: dict, patterns: dict, seen: set, top: bool = False,
          branches: bool = True) -> str | None:
    """Collect what `node` and its in-place members evaluate; EVERYTHING, None (branches, when
    `branches` says to stop there), or "" (collected)."""
    s = node.schema
    if not isinstance(s, dict):
        return ""  # true evaluates nothing; false never validates (nothing to close)
    key = (node.ptr, node.base)
    if key in seen:
        return ""
    seen.add(key)
    if "additionalProperties" in s or (not top and "unevaluatedProperties" in s):
        return EVERYTHING
    if branches and any(k in s for k in _BRANCHING):
        return None
    for name in s.get("properties", {}) if isinstance(s.get("properties"), dict) else ():
        names.setdefault(name)
    for pattern in s.get("patternProperties", {}) if isinstance(s.get("patternProperties"), dict) else ():
        patterns.setdefault(pattern)
    for member in _in_place(node, resolve):
        got = _walk(member, resolve, names, patterns, seen, branches=branches)
        if got != "":
            return got
    return ""


def closing_items(node: Node, resolve, draft_name: str) -> Node | str | None:
    """`unevaluatedItems` as one more member, like closing_member: the items past every prefix
    the closure evaluates (`prefixItems`, or draft 2019-09's array `items`) that no `contains`
    of the closure matches must satisfy the keyword's schema. EVERYTHING when `items` (a
    schema), `additionalItems` or a nested `unevaluatedItems` evaluates every item; None where
    the closure branches, or a `contains` lives under another base (its refs would move)."""
    found = {"prefix": 0, "contains": []}
    got = _walk_items(node, resolve, found, set(), node.base, top=True)
    if got is not None and got != "":
        return got
    if got is None:
        return None
    rest = node.schema["unevaluatedItems"]
    if found["contains"]:
        rest = {"anyOf": [rest, *found["contains"]]}
    n = found["prefix"]
    if draft_name == "2019-09":  # no prefixItems there: the array form of items
        closer = {"items": [{}] * n, "additionalItems": rest} if n else {"items": rest}
    else:
        closer = {"prefixItems": [{}] * n, "items": rest} if n else {"items": rest}
    return Node(closer, f"{node.ptr}/unevaluatedItems", node.base, node.ref_alone)


def _walk_items(node: Node, resolve, found: dict, seen: set, base: str, top: bool = False) -> str | None:
    s = node.schema
    if not isinstance(s, dict):
        return ""
    key = (node.ptr, node.base)
    if key in seen:
        return ""
    seen.add(key)
    items = s.get("items")
    if isinstance(items, (dict, bool)) or (isinstance(items, list) and "additionalItems" in s) \
            or (not top and "unevaluatedItems" in s):
        return EVERYTHING
    if any(k in s for k in _BRANCHING):
        return None
    for tuple_form in (s.get("prefixItems"), items):
        if isinstance(tuple_form, list):
            found["prefix"] = max(found["prefix"], len(tuple_form))
    if "contains" in s:
        if node.base != base:
            return None
        found["contains"].append(s["contains"])
    for member in _in_place(node, resolve):
        got = _walk_items(member, resolve, found, seen, base)
        if got != "":
            return got
    return ""


def _in_place(node: Node, resolve) -> list[Node]:
    """The members a schema object always applies in place: its `allOf` members and `$ref`."""
    s = node.schema
    members = [node.child("allOf", i) for i in range(len(s["allOf"]))] if isinstance(s.get("allOf"), list) else []
    if isinstance(s.get("$ref"), str):
        members.append(resolve(s["$ref"], node.base))
    return members
