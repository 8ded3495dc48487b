"""`not` as a union of normalized schemas: d ∧ ¬n as a list of alternatives.

Owns negation by De Morgan over a schema's keywords, each negated within its
instance type (e.g. ¬required[a,b] is "an object without all of a, b"; a
non-object satisfies `required`, so it is not in the negation), `¬oneOf` as
"none of the branches, or two at once", and the markers (`_not_enum`,
`_forbid`, `_not_patterns`, ...) that carry negations the schema keywords
cannot say. Keywords whose negation is not regular or not implemented are
left out when that is sound (noted) and reported through
`Lowering.unsupported` when it is not. Knows nothing about IR, nor about how
composition combines the alternatives.
"""

from __future__ import annotations


from .disjoint import disjoint
from .drafts import UNDECLARED
from .merge import PP_SIDES, property_view, synthetic, type_set
from .order import META, NOT_PATTERN_AT
from .refs import Node
from .unevaluated import EVALUATED, UNEVAL
from .lowering import Lowering


MAX_ALTERNATIVES = 256  # per composite schema (json_composition) and per negated oneOf
_NUMERIC = frozenset({"number", "integer"})
# keyword -> (types it applies to, negated keyword, transform of the value)
_BOUND_NEGATIONS = {
    "minimum": (_NUMERIC, "exclusiveMaximum", lambda v: v),
    "exclusiveMinimum": (_NUMERIC, "maximum", lambda v: v),
    "maximum": (_NUMERIC, "exclusiveMinimum", lambda v: v),
    "exclusiveMaximum": (_NUMERIC, "minimum", lambda v: v),
    "minLength": (frozenset({"string"}), "maxLength", lambda v: v - 1),
    "maxLength": (frozenset({"string"}), "minLength", lambda v: v + 1),
    "minItems": (frozenset({"array"}), "maxItems", lambda v: v - 1),
    "maxItems": (frozenset({"array"}), "minItems", lambda v: v + 1),
    "minProperties": (frozenset({"object"}), "maxProperties", lambda v: v - 1),
    "maxProperties": (frozenset({"object"}), "minProperties", lambda v: v + 1),
}


class Negation:
    def __init__(self, lowerer: Lowering):
        self.lw = lowerer

    def negate(self, d: dict, neg: Node, ptr: str) -> list:
        """Alternatives whose union is d ∧ ¬neg."""
        n = self.lw.normalize(neg)
        if n is False:
            return [d]
        if n is True:
            return []
        named = {"_oneOfs": "oneOf", "_conds": "if", "_forbid": "not(required)", "_not_enum": "not(enum)",
                 UNEVAL: "unevaluatedProperties"}
        keys = [named.get(k, k) for k in n if k not in META and k != EVALUATED]
        if not keys:
            return []
        if keys == ["not"]:
            return [self.lw.merged(d, self.lw.normalize(n["not"]), n["not"])]
        if keys == ["anyOf"]:
            return self._none_of(d, n["anyOf"], ptr)
        out, dropped = [], []
        for key in keys:
            part = self._negate_keyword(d, n, key, ptr)
            if part is None:
                dropped.append(key)
            else:
                out.extend(part)
        out = [a for a in out if a is not False and type_set(a)]
        if dropped:
            # ¬n is the union of its keywords' negations: leaving some out is a sound subset
            if not out:
                where = _declared_at(n, dropped[0], ptr)
                self.lw.unsupported(where, "not", f"the negation of `{where.rsplit('/', 1)[-1]}` is not enforced")
                return [d]
            self.lw.note(f"{ptr or '/'}: instances that violate only {', '.join(dropped)} of this "
                         f"(negated) schema are excluded (sound, not exact)")
        return out

    def _negate_keyword(self, d: dict, n: dict, key: str, ptr: str) -> list:
        value = n.get(key)
        if key == "type":
            if "integer" in value and "number" not in value and "number" in type_set(d):
                rest = _with_types(d, type_set(d) - value - {"number"})
                fraction = _with_types(d, {"number"})
                fraction["_not_integer"] = True  # json_scalars.lower_number: non-integral numbers
                return [rest, fraction]
            return [_with_types(d, type_set(d) - value - ({"integer"} if "number" in value else set()))]
        if key == "not":  # ¬¬X = X
            return [self.lw.merged(d, self.lw.normalize(value), value)]
        if key == "pattern":  # ¬(p1 ∧ p2 ...) on strings: a string failing one of them
            alts = []  # non-strings satisfy `pattern`: they are not in its negation
            for p in [value] + list(n.get("_patterns", [])):
                a = _with_types(d, type_set(d) & {"string"})
                a["_not_patterns"] = list(d.get("_not_patterns", [])) + [p]
                a[NOT_PATTERN_AT] = {**d.get(NOT_PATTERN_AT, {}), p: _written_at(n, "pattern", p, ptr)}
                alts.append(a)
            return alts
        if key == "oneOf":  # ¬oneOf: none of the branches, or two of them at once
            return self._negate_one_of(d, n["_oneOfs"], ptr)
        if key == "items" and "prefixItems" not in n:
            # some item fails the items schema: contains ¬items (next to any contains d has)
            a = _with_types(d, type_set(d) & {"array"})
            failing = synthetic({"not": value}, value)
            if "contains" in a:
                a["_contains_more"] = list(a.get("_contains_more", [])) + [(failing, 1, None)]
            else:
                a["contains"] = failing
                a["_contains_from"] = value.ptr  # errors about this `contains` name the negated `items`
            return [a]
        if key == "prefixItems":  # some position i the array reaches fails prefixItems[i]
            alts = []
            for i, sub in enumerate(value):
                a = _with_types(d, type_set(d) & {"array"})
                own = list(a.get("prefixItems", []))
                rest = a.get("items")
                while len(own) <= i:  # positions up to i from d's own prefix, then its items
                    own.append(rest if rest is not None else synthetic({}, sub))
                failing = synthetic({"not": sub}, sub)
                own[i] = synthetic({"allOf": [own[i], failing]}, failing)
                a["prefixItems"] = own
                a["minItems"] = max(int(a.get("minItems", 0)), i + 1)
                alts.append(a)
            return alts
        if key == "contains" and "minContains" not in n and "maxContains" not in n:
            # no item satisfies contains: every item (prefix ones too) is ¬contains
            a = _with_types(d, type_set(d) & {"array"})
            failing = synthetic({"not": value}, value)
            a["items"] = failing if a.get("items") is None else synthetic({"allOf": [a["items"], failing]}, failing)
            if a.get("prefixItems"):
                a["prefixItems"] = [synthetic({"allOf": [p, failing]}, failing) for p in a["prefixItems"]]
            return [a]
        if key in ("dependentSchemas", "dependentRequired"):  # a present name whose dependency fails
            if self.lw.draft is UNDECLARED and any(
                    isinstance(src.schema, dict) and "dependencies" in src.schema for src in n.get("_sources", ())):
                # no $schema: jsonschema validates with 2020-12, which has no `dependencies`, while
                # the grammar keeps the draft-07 reading. Negated, it is read as 2020-12 reads it
                # (always satisfied: nothing violates it), a subset of the draft-07 negation
                return []
            where, out = Node({}, ptr, ""), []
            for name, dep in value.items():
                a = self.lw.merged(_with_types(d, type_set(d) & {"object"}),
                                   {"required": [name], "_sources": []}, where)
                if key == "dependentSchemas":
                    out.extend(self.negate(a, dep, f"{ptr}/dependentSchemas/{name}"))
                else:
                    for other in dep:
                        b = dict(a)
                        b["_forbid"] = list(a.get("_forbid", [])) + [[other]]
                        out.append(b)
            return out
        if key == "multipleOf":  # numbers that are not multiples (integers only: json_scalars)
            a = _with_types(d, type_set(d) & _NUMERIC)
            a["_not_multiple_of"] = list(d.get("_not_multiple_of", [])) + [value]
            return [a]
        if key == "_not_multiple_of":  # ¬(not a multiple of any) = a multiple of one of them
            where = Node({}, ptr, "")
            return [self.lw.merged(_with_types(d, type_set(d) & _NUMERIC), {"multipleOf": m, "_sources": []},
                                   where) for m in value]
        if key == "_not_integer":  # ¬(number ⇒ not integral) = an integer
            return [_with_types(d, type_set(d) & {"integer", "number"} and {"integer"})]
        if key == "_patterns":
            return []  # negated together with `pattern`
        if key == "_not_patterns":  # ¬(string ⇒ ¬p) = a string matching p
            where = Node({}, ptr, "")
            return [self.lw.merged(_with_types(d, type_set(d) & {"string"}), {"pattern": p, "_sources": []},
                                   where) for p in value]
        if key == "enum":
            out = dict(d)
            out["_not_enum"] = list(d.get("_not_enum", [])) + list(value)
            return [out]
        if key == "required":
            out = _with_types(d, type_set(d) & {"object"})
            out["_forbid"] = list(d.get("_forbid", [])) + [list(value)]
            return [out]  # non-objects satisfy `required`: they are not in its negation
        if key == "properties":
            alts = []  # non-objects satisfy `properties`
            for name, sub in value.items():
                if _implied(property_view(d, name), sub):
                    continue  # d already holds that very sub-schema: no value of d's violates it
                a = _with_types(d, type_set(d) & {"object"})
                a["required"] = list(dict.fromkeys(list(a.get("required", [])) + [name]))
                props = dict(a.get("properties", {}))
                props[name] = synthetic({"allOf": [x for x in (property_view(d, name),) if x is not None]
                                         + [synthetic({"not": sub}, sub)]}, sub)
                a["properties"] = props
                alts.append(a)
            return alts
        if key == "additionalProperties":
            return self._negate_additional(d, n, value)
        if key == "anyOf":  # ¬anyOf: no branch holds
            return self._none_of(d, value, ptr)
        if key == "if":  # ¬(if C then T else E), for any one of the conditions: C ∧ ¬T, or ¬C ∧ ¬E
            alts = []
            for cond, then, other in n["_conds"]:
                if then is not None:
                    alts += self.negate(self.lw.merged(d, self.lw.normalize(cond), cond), then, ptr)
                if other is not None:
                    alts += [y for x in self.negate(d, cond, ptr) if x is not False
                             for y in self.negate(x, other, ptr)]
                if len(alts) > MAX_ALTERNATIVES:
                    raise self.lw.fail(ptr, f"composition expands to more than {MAX_ALTERNATIVES} alternatives")
            return [a for a in alts if a is not False]
        if key == "patternProperties":  # some member a pattern matches has a value its schema rejects
            base = _with_types(d, type_set(d) & {"object"})
            return [] if not type_set(base) else [
                {**base, "_some_member": list(d.get("_some_member", [])) + [
                    ((), (), synthetic({"not": sub}, sub), (pattern,))]}
                for pattern, sub in value.items() if not _allows_all(self.lw.normalize(sub))]
        if key in _BOUND_NEGATIONS:
            group, neg_key, transform = _BOUND_NEGATIONS[key]
            inside = _with_types(d, type_set(d) & (group | ({"number"} if "integer" in group else set())))
            inside = self.lw.merged(inside, {neg_key: transform(value), "_sources": []}, Node({}, ptr, ""))
            return [inside]  # other types satisfy the bound: they are not in its negation
        return None  # not expressible here

    def _negate_additional(self, d: dict, n: dict, addl: Node) -> list | None:
        """¬additionalProperties: some member that n declares by no property and no pattern has a
        value `addl` rejects (the `_some_member` marker: json_objects generates one, declared
        or undeclared)."""
        if PP_SIDES in n:  # which members are additional differs per allOf member: not negated here
            return None
        failing = synthetic({"not": addl}, addl)
        if self.lw.normalize(failing) is False:
            return []  # addl allows every value: nothing violates it
        base = _with_types(d, type_set(d) & {"object"})
        if not type_set(base):
            return []
        declared = list(n.get("properties", {}))
        patterns = list(n.get("patternProperties", {}))
        a = dict(base)  # json_objects: a declared or an undeclared member, at least one
        a["_some_member"] = list(d.get("_some_member", [])) + [
            (tuple(declared), tuple(patterns), failing, ())]
        return [a]

    def _none_of(self, d: dict, branches: list, ptr: str) -> list:
        """Alternatives whose union is d and no branch (each branch negated in turn)."""
        alts = [d]
        for branch in branches:
            alts = [y for a in alts for y in self.negate(a, branch, ptr) if y is not False]
            if len(alts) > MAX_ALTERNATIVES:
                raise self.lw.fail(ptr, f"composition expands to more than {MAX_ALTERNATIVES} alternatives")
        return alts

    def _negate_one_of(self, d: dict, one_ofs: list, ptr: str) -> list:
        out = []
        for branches in one_ofs:
            out.extend(self._none_of(d, branches, ptr))
            normal = [self.lw.normalize(b) for b in branches]
            for i in range(len(branches)):
                for j in range(i + 1, len(branches)):
                    if not disjoint(self.lw, normal[i], normal[j]):
                        both = self.lw.merged(self.lw.merged(d, normal[i], branches[i]), normal[j], branches[j])
                        out.append(both)
        return out


def _written_at(n: dict, key: str, value, ptr: str) -> str:
    """The pointer of the source of normalized `n` that wrote `key: value` (for errors)."""
    for src in n.get("_sources", ()):
        if isinstance(src.schema, dict) and src.schema.get(key) == value:
            return f"{src.ptr.rstrip('/')}/{key}"
    return f"{ptr}/{key}"


def bound_written_at(d: dict, node: Node, key: str) -> str:
    """Where bound `key` (minItems, maxLength, ...) of normalized `d` was written: a source
    that has it, else one whose `not` has the opposite bound (`not: {minItems: n}` is
    `maxItems: n - 1`), else the node itself."""
    opposite = next((k for k, (_, neg, _) in _BOUND_NEGATIONS.items() if neg == key), None)
    sources = [src for src in d.get("_sources", ()) if isinstance(src.schema, dict)]
    for src in sources:
        if key in src.schema:
            return f"{src.ptr}/{key}"
    for src in sources:
        negated = src.schema.get("not")
        if opposite is not None and isinstance(negated, dict) and opposite in negated:
            return f"{src.ptr}/not/{opposite}"
    return f"{node.ptr}/{key}"


def _implied(view: Node | None, sub: Node) -> bool:
    """`view` (what d says of a property) includes the very sub-schema `sub` (the same schema
    object, read with the same base: two `$ref`s to one definition, the shared base of oneOf
    branches), so no value `view` allows violates `sub`. Why: negating branch j inside branch i
    of a oneOf whose branches share a base made one alternative per shared property, each
    empty, and 4 such branches went past MAX_ALTERNATIVES (MaskBench's Github_hard---o33131)."""
    if view is None:
        return False
    if view.schema is sub.schema and view.base == sub.base:
        return True
    members = view.schema.get("allOf") if isinstance(view.schema, dict) else None
    return isinstance(members, list) and any(isinstance(m, Node) and _implied(m, sub) for m in members)


def _allows_all(norm) -> bool:
    """A normalized schema every value satisfies (True, or annotations only)."""
    return norm is True or (isinstance(norm, dict) and not [k for k in norm if k not in META])


def _with_types(d: dict, types) -> dict:
    out = dict(d)
    out["type"] = frozenset(types)
    return out


def _declared_at(n: dict, key: str, ptr: str) -> str:
    """Where keyword `key` of the negated schema was written: draft-07 tuple `items` are
    `prefixItems` once normalized (their nodes still know their pointer), `dependencies` are
    `dependentRequired` / `dependentSchemas`."""
    value = n.get(key)
    if key == "prefixItems" and isinstance(value, list) and value and isinstance(value[0], Node):
        return value[0].ptr.rsplit("/", 1)[0]
    written = [src.schema for src in n.get("_sources", ()) if isinstance(src.schema, dict)]
    if key.startswith("dependent") and not any(key in w for w in written) and \
            any("dependencies" in w for w in written):
        return f"{ptr}/dependencies"  # draft-07 `dependencies`, split when normalized
    return f"{ptr}/{key}"
