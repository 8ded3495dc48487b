"""`anyOf`, `oneOf`, `not` and `if`/`then`/`else` as unions of normalized schemas.

Owns the boolean algebra: a composite schema becomes a list of alternatives
(normalized dicts, see json_merge) whose union is exactly its valid set.
`oneOf` branch i is `base ∧ b_i ∧ ¬b_j` for every j not provably disjoint from
it; `if` becomes `(c ∧ then) ∨ (¬c ∧ else)`. Negation is by De Morgan over a
schema's keywords, each negated within its instance type (e.g. ¬required[a,b]
is "an object without all of a, b"); keywords whose negation is not regular or
not implemented are reported through `Lowerer.unsupported`. Knows nothing
about IR beyond handing alternatives back to the Lowerer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt

from .json_merge import TYPES, canon, synthetic, type_set
from .json_order import ANY_OF_POS, BRANCH_KEYS, COND_POS, META, ONE_OF_POS, branch_prefix, place
from .json_refs import Node

if TYPE_CHECKING:  # pragma: no cover
    from .json_schema import Lowerer

MAX_ALTERNATIVES = 256
_COMPOSITE = ("anyOf", "_oneOfs", "not", "_conds")
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


def value_types(values) -> frozenset:
    out = set()
    for v in values:
        if v is None:
            out.add("null")
        elif isinstance(v, bool):
            out.add("boolean")
        elif isinstance(v, (int, float)):
            out |= {"number", "integer"} if float(v).is_integer() else {"number"}
        elif isinstance(v, str):
            out.add("string")
        elif isinstance(v, list):
            out.add("array")
        else:
            out.add("object")
    return frozenset(out)


def effective_types(d: dict) -> frozenset:
    types = set(type_set(d))
    if "number" in types:
        types.add("integer")
    if "enum" in d:
        types &= value_types(d["enum"])
    return frozenset(types)


class Composition:
    def __init__(self, lowerer: "Lowerer"):
        self.lw = lowerer

    def lower(self, d: dict, node: Node) -> Expr:
        direct = self._direct(d)
        if direct is not None:
            return direct
        alts = [{k: v for k, v in d.items() if k not in _COMPOSITE and k not in BRANCH_KEYS}]
        if "not" in d:
            alts = self._each(alts, lambda a: self.negate(a, d["not"], f"{node.ptr}/not"), node)
        for cond in d.get("_conds", []):
            at = branch_prefix(d, COND_POS, cond)
            alts = self._each(alts, lambda a, c=cond, at=at: self.if_then_else(a, c, node, at), node)
        if "anyOf" in d:
            at = d.get(ANY_OF_POS)
            alts = self._each(alts, lambda a: [self.lw.merged(a, place(self.lw.normalize(b), at, i), b)
                                               for i, b in enumerate(d["anyOf"])], node)
        for branches in d.get("_oneOfs", []):
            at = branch_prefix(d, ONE_OF_POS, branches)
            alts = self._each(alts, lambda a, bs=branches, at=at: [x for i in range(len(bs))
                                                                   for x in self.one_of(a, i, bs, node, at)], node)
        return alt(*(self.lw.lower_normal(a, node) for a in alts if a is not False)) if alts else ir.NOTHING

    def _direct(self, d: dict) -> Expr | None:
        """A bare anyOf, or a bare oneOf of disjoint branches: lower the branch nodes themselves,
        so that `$ref` branches stay (possibly recursive) rules instead of being expanded."""
        rest = [k for k in d if k not in META]
        if rest == ["anyOf"]:
            branches = d["anyOf"]
        elif rest == ["_oneOfs"] and len(d["_oneOfs"]) == 1:
            branches = d["_oneOfs"][0]
            normal = [self.lw.normalize(b) for b in branches]
            if not all(self.disjoint(normal[i], normal[j])
                       for i in range(len(normal)) for j in range(i + 1, len(normal))):
                return None
        else:
            return None
        return alt(*(e for e in (self.lw.lower(b) for b in branches) if e != ir.NOTHING)) or ir.NOTHING

    def _each(self, alts, step, node: Node) -> list:
        self.lw.check_time(node.ptr)
        out = [x for a in alts if a is not False for x in step(a) if x is not False]
        if len(out) > MAX_ALTERNATIVES:
            raise self.lw.fail(node.ptr, f"composition expands to more than {MAX_ALTERNATIVES} alternatives")
        return out

    # ---------------------------------------------------------------- oneOf
    def one_of(self, base: dict, i: int, branches: list[Node], node: Node, at: tuple | None = None) -> list:
        """Branch i (placed at `at` + (i,) for member order, see json_order) and no other branch."""
        mine = self.lw.merged(base, place(self.lw.normalize(branches[i]), at, i), branches[i])
        alts = [mine]
        for j, other in enumerate(branches):
            if j == i:
                continue
            theirs = self.lw.merged(base, self.lw.normalize(other), other)
            alts = [y for a in alts for y in
                    ([a] if self.disjoint(a, theirs) else self.negate(a, other, f"{node.ptr}/oneOf/{j}"))
                    if y is not False]
        return alts

    def disjoint(self, a, b, depth: int = 0) -> bool:
        """True if no instance is valid against both normalized schemas (conservative)."""
        if a is False or b is False:
            return True
        if a is True or b is True or depth > 4:
            return False
        common = effective_types(a) & effective_types(b)
        if not common:
            return True
        for x, y in ((a, b), (b, a)):
            if "enum" in x and not [v for v in x["enum"]
                                    if all(self.lw.valid(v, _positive(s)) for s in y["_sources"])]:
                return True
        if common <= {"object"}:
            return self._objects_disjoint(a, b, depth)
        return False

    def _objects_disjoint(self, a: dict, b: dict, depth: int) -> bool:
        for x, y in ((a, b), (b, a)):
            for name in x.get("required", []):
                view = _view(y, name)
                if view is not None and self.lw.normalize(view) is False:
                    return True
                if name in y.get("required", []):
                    vx, vy = _view(x, name), _view(y, name)
                    if vx is not None and vy is not None and self.disjoint(
                            self.lw.normalize(vx), self.lw.normalize(vy), depth + 1):
                        return True
        return False

    def _negate_one_of(self, d: dict, one_ofs: list, ptr: str) -> list:
        out = []
        for branches in one_ofs:
            none = [d]
            for b in branches:
                none = [y for a in none for y in self.negate(a, b, ptr) if y is not False]
                if len(none) > MAX_ALTERNATIVES:
                    raise self.lw.fail(ptr, f"composition expands to more than {MAX_ALTERNATIVES} alternatives")
            out.extend(none)
            normal = [self.lw.normalize(b) for b in branches]
            for i in range(len(branches)):
                for j in range(i + 1, len(branches)):
                    if not self.disjoint(normal[i], normal[j]):
                        both = self.lw.merged(self.lw.merged(d, normal[i], branches[i]), normal[j], branches[j])
                        out.append(both)
        return out

    # ------------------------------------------------------------ if / then
    def if_then_else(self, d: dict, conditional: tuple, node: Node, at: tuple | None = None) -> list:
        cond, then, other = conditional
        yes = self.lw.merged(d, place(self.lw.normalize(cond), at, 0), cond)
        if then is not None:
            yes = self.lw.merged(yes, place(self.lw.normalize(then), at, 1), then)
        noes = self.negate(d, cond, f"{cond.ptr}")
        if other is not None:
            noes = [self.lw.merged(n, place(self.lw.normalize(other), at, 2), other) for n in noes]
        return [yes, *noes]

    # ------------------------------------------------------------------ not
    def negate(self, d: dict, neg: Node, ptr: str) -> list:
        """Alternatives whose union is d ∧ ¬neg."""
        n = self.lw.normalize(neg)
        if n is False:
            return [d]
        if n is True:
            return []
        named = {"_oneOfs": "oneOf", "_conds": "if", "_forbid": "not(required)", "_not_enum": "not(enum)"}
        keys = [named.get(k, k) for k in n if k not in META]
        if not keys:
            return []
        if keys == ["not"]:
            return [self.lw.merged(d, self.lw.normalize(n["not"]), n["not"])]
        if keys == ["anyOf"]:
            alts = [d]
            for branch in n["anyOf"]:
                alts = [y for a in alts for y in self.negate(a, branch, ptr) if y is not False]
            return alts
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
                self.lw.unsupported(f"{ptr}/{dropped[0]}", "not",
                                    f"the negation of `{dropped[0]}` is not enforced")
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
                alts.append(a)
            return alts
        if key == "oneOf":  # ¬oneOf: none of the branches, or two of them at once
            return self._negate_one_of(d, n["_oneOfs"], ptr)
        if key == "items" and "prefixItems" not in n and "contains" not in d:
            # some item fails the items schema: contains ¬items
            a = _with_types(d, type_set(d) & {"array"})
            a["contains"] = synthetic({"not": value}, value)
            return [a]
        if key in ("dependentSchemas", "dependentRequired"):  # a present name whose dependency fails
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
                a = _with_types(d, type_set(d) & {"object"})
                a["required"] = list(dict.fromkeys(list(a.get("required", [])) + [name]))
                props = dict(a.get("properties", {}))
                props[name] = synthetic({"allOf": [x for x in (_view(d, name),) if x is not None]
                                         + [synthetic({"not": sub}, sub)]}, sub)
                a["properties"] = props
                alts.append(a)
            return alts
        if key in _BOUND_NEGATIONS:
            group, neg_key, transform = _BOUND_NEGATIONS[key]
            inside = _with_types(d, type_set(d) & (group | ({"number"} if "integer" in group else set())))
            inside = self.lw.merged(inside, {neg_key: transform(value), "_sources": []}, Node({}, ptr, ""))
            return [inside]  # other types satisfy the bound: they are not in its negation
        return None  # not expressible here


def _with_types(d: dict, types) -> dict:
    out = dict(d)
    out["type"] = frozenset(types)
    return out


def _view(schema: dict, name: str):
    from .json_merge import _view as view
    return view(schema, name)


__all__ = ["Composition", "effective_types", "value_types", "canon", "TYPES"]


# Composition keywords a disjointness test must not consult: a source holding the very oneOf (or
# not / if) being decided would judge a value by the exclusion the test is meant to justify
# (`oneOf: [{}, {const: 2}]`: 2 is invalid against the whole schema only because both branches
# admit it). Without them a source admits more values, so fewer branch pairs count as disjoint:
# sound, possibly more alternatives.
_DECIDED = ("oneOf", "anyOf", "allOf", "not", "if", "then", "else", "dependentSchemas")


def _positive(node: Node) -> Node:
    s = node.schema
    if isinstance(s, dict) and any(k in s for k in _DECIDED):
        return Node({k: v for k, v in s.items() if k not in _DECIDED}, node.ptr, node.base)
    return node
