"""Which arrays of an instance must have distinct items: the `uniqueItems` policy.

Owns the contexts `constraints.unique.UniqueItemsAutomaton` walks: a context is
the set of sub-schemas that may apply at one place of the instance, found by
following `$ref`, `allOf`/`anyOf`/`oneOf`, `if`/`then`/`else` and dependent
schemas, then `properties`/`patternProperties`/`additionalProperties` for a
member name and every item keyword for an array element. Taking every branch
over-approximates where `uniqueItems: true` applies, which is sound: an array
is only ever checked more often than the schema asks (the grammar generates
the other arrays' items as usual). Knows nothing about tokens.
"""

from __future__ import annotations

import re

from .drafts import draft_of
from .refs import Node, RefError, Refs

_BRANCHES = ("allOf", "anyOf", "oneOf")
_SINGLE = ("if", "then", "else", "not")  # `not`: a double negation (not: {not: X}) is X


class UniquePolicy:
    def __init__(self, root) -> None:
        self.refs = Refs(root, draft_of(root).ref_alone)  # resolved as the lowering resolves them
        self.nodes: list[Node] = []
        self._ids: dict[tuple, int] = {}
        self._memo: dict = {}

    def _id(self, node: Node) -> int:
        key = (id(node.schema), node.base)
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = len(self.nodes)
            self.nodes.append(node)
        return got

    def _closure(self, start: list[Node]) -> frozenset:
        seen: set[int] = set()
        stack = list(start)
        while stack:
            node = stack.pop()
            if not isinstance(node.schema, dict):
                continue
            i = self._id(node)
            if i in seen:
                continue
            seen.add(i)
            s = node.schema
            if isinstance(s.get("$ref"), str):
                try:
                    stack.append(self.refs.resolve(s["$ref"], node.base))
                except RefError:
                    pass
            for key in _BRANCHES:
                if isinstance(s.get(key), list):
                    stack.extend(node.child(key, i) for i in range(len(s[key])))
            for key in _SINGLE:
                if key in s:
                    stack.append(node.child(key))
            for key in ("dependentSchemas", "dependencies"):
                if isinstance(s.get(key), dict):
                    stack.extend(node.child(key, k) for k, v in s[key].items() if isinstance(v, dict))
        return frozenset(seen)

    def root(self) -> frozenset:
        return self._closure([self.refs.root])

    def unique(self, ctx: frozenset) -> bool:
        return any(self.nodes[i].schema.get("uniqueItems") is True for i in ctx)

    def key(self, ctx: frozenset, name) -> frozenset:
        return self.member(ctx, name, every_pattern=False)

    def member(self, ctx: frozenset, name, every_pattern: bool) -> frozenset:
        """The context of member `name` (not a str: no declared name matches it): its
        `properties` entry or `additionalProperties` in each node, and the patternProperties
        it matches, or every one of them with `every_pattern` (a superset, no regex asked)."""
        memo_key = ("k", ctx, name, every_pattern)
        got = self._memo.get(memo_key)
        if got is None:
            out = []
            for i in ctx:
                node = self.nodes[i]
                s = node.schema
                props = s.get("properties")
                if isinstance(name, str) and isinstance(props, dict) and name in props:
                    out.append(node.child("properties", name))
                elif "additionalProperties" in s:
                    out.append(node.child("additionalProperties"))
                for p in s.get("patternProperties", {}) if isinstance(s.get("patternProperties"), dict) else ():
                    if every_pattern or (isinstance(name, str) and _search(p, name)):
                        out.append(node.child("patternProperties", p))
            got = self._memo[memo_key] = self._closure(out)
        return got

    def item(self, ctx: frozenset) -> frozenset:
        memo_key = ("i", ctx)
        got = self._memo.get(memo_key)
        if got is None:
            out = []
            for i in ctx:
                node = self.nodes[i]
                s = node.schema
                for key in ("items", "prefixItems"):
                    if isinstance(s.get(key), list):
                        out.extend(node.child(key, j) for j in range(len(s[key])))
                    elif key in s:
                        out.append(node.child(key))
                for key in ("additionalItems", "contains", "unevaluatedItems"):
                    if key in s:
                        out.append(node.child(key))
            got = self._memo[memo_key] = self._closure(out)
        return got


def _search(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return True  # unknown: assume it may apply (sound)
