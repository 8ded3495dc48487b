"""Whether two normalized schemas provably admit no common value (for `oneOf`).

Owns the conservative disjointness test composition relies on: a `oneOf`
branch need not be negated against a branch it cannot overlap, and a bare
`oneOf` of pairwise disjoint branches is a plain union. "Disjoint" is only
answered when it is certain (no shared instance type, an `enum` no value of
which the other side admits, a required property whose schemas cannot both
hold, number ranges that do not meet, string lengths that do not meet or
patterns with no common text); anything else counts as overlapping, which costs alternatives, never
soundness. Knows nothing about IR or negation.
"""

from __future__ import annotations

import functools
from numbers import Real

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints.errors import ConstraintError

from .merge import property_view, type_set
from .pattern import PatternError, parse_pattern
from .refs import Node
from .lowering import Lowering



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


def disjoint(lw: Lowering, a, b, depth: int = 0) -> bool:
    """True if no instance is valid against both normalized schemas (conservative)."""
    if a is False or b is False:
        return True
    if a is True or b is True or depth > 4:
        return False
    for x, y in ((a, b), (b, a)):
        # every value of x is valid against one of its oneOf / anyOf branches: x and y share
        # none when no branch shares one with y (`parameter: oneOf [body, nonBody]` against
        # `jsonReference` in Swagger 2.0, told apart by properties only the branches declare)
        for branches in _compositions(x):
            if all(disjoint(lw, lw.normalize(branch), y, depth + 1) for branch in branches):
                return True
    common = effective_types(a) & effective_types(b)
    if not common:
        return True
    for x, y in ((a, b), (b, a)):
        if "enum" in x and not [v for v in _spellings(x["enum"])
                                if all(lw.valid(v, _positive(s)) for s in y["_sources"])]:
            return True
    if common <= {"object"}:
        return _objects_disjoint(lw, a, b, depth)
    if common <= {"number", "integer"}:
        return _ranges_disjoint(_bound(a, "minimum", "exclusiveMinimum", max),
                                _bound(b, "maximum", "exclusiveMaximum", min)) or \
            _ranges_disjoint(_bound(b, "minimum", "exclusiveMinimum", max),
                             _bound(a, "maximum", "exclusiveMaximum", min))
    if common <= {"string"}:
        return _strings_disjoint(a, b)
    return False


def _compositions(d: dict) -> list:
    """The branch lists of a normalized schema's `oneOf`s and `anyOf` (each a list of nodes)."""
    found = list(d.get("_oneOfs", []))
    if isinstance(d.get("anyOf"), list):
        found.append(d["anyOf"])
    return [branches for branches in found if branches]


def _bound(d: dict, inclusive: str, exclusive: str, tighter) -> tuple | None:
    """(value, exclusive?) of the tighter of a normalized schema's two bounds on one side."""
    found = [(d[k], k == exclusive) for k in (inclusive, exclusive)
             if isinstance(d.get(k), Real) and not isinstance(d.get(k), bool)]
    if not found:
        return None
    value = tighter(v for v, _ in found)
    return value, any(excl for v, excl in found if v == value)


def _ranges_disjoint(low: tuple | None, high: tuple | None) -> bool:
    """No number is >= (or >) `low` and <= (or <) `high`."""
    if low is None or high is None:
        return False
    return low[0] > high[0] or (low[0] == high[0] and (low[1] or high[1]))


def _strings_disjoint(a: dict, b: dict) -> bool:
    """Length ranges that do not meet, or patterns (all of both sides') with no common text."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x.get("maxLength"), int) and isinstance(y.get("minLength"), int) \
                and x["maxLength"] < y["minLength"]:
            return True
    mine, theirs = _patterns(a), _patterns(b)
    return bool(mine and theirs) and _no_common_text(mine + theirs)


def _patterns(d: dict) -> tuple:
    found = ([d["pattern"]] if isinstance(d.get("pattern"), str) else []) + \
        [p for p in d.get("_patterns", []) if isinstance(p, str)]
    return tuple(dict.fromkeys(found))


@functools.lru_cache(maxsize=4096)
def _no_common_text(patterns: tuple) -> bool:
    """Whether no text matches every pattern, decided on their exact (Python `re.search`)
    languages: a sound subset could miss a text both match (`$` before a final newline)."""
    try:
        common = None
        for i, p in enumerate(patterns):
            lang = dfa_ops.expr_dfa(parse_pattern(p, exact=True))
            common = lang if i == 0 else dfa_ops.intersect(common, lang)
            if common is None:
                return True
        return False
    except (PatternError, dfa_ops.DfaOpError, ConstraintError, RecursionError):
        return False


def _objects_disjoint(lw: Lowering, a: dict, b: dict, depth: int) -> bool:
    for x, y in ((a, b), (b, a)):
        for name in x.get("required", []):
            view = property_view(y, name)
            if view is not None and lw.normalize(view) is False:
                return True
            # x's required member is there, so y's schema for it applies too (y need not require it:
            # Swagger's fileSchema requires `type: file`, its schema allows only JSON Schema's types)
            vx = property_view(x, name)
            if vx is not None and view is not None and disjoint(
                    lw, lw.normalize(vx), lw.normalize(view), depth + 1):
                return True
    return False


# Composition keywords a disjointness test must not consult: a source holding the very oneOf (or
# not / if) being decided would judge a value by the exclusion the test is meant to justify
# (`oneOf: [{}, {const: 2}]`: 2 is invalid against the whole schema only because both branches
# admit it). Without them a source admits more values, so fewer branch pairs count as disjoint:
# sound, possibly more alternatives.
_DECIDED = ("oneOf", "anyOf", "allOf", "not", "if", "then", "else", "dependentSchemas")


def _spellings(values: list) -> list:
    """The enum's values and, where they hold integral numbers (at any depth), the same values
    with those numbers as ints and as floats: enum equality takes 1 == 1.0, but draft-04's
    `type: integer` accepts only the int."""
    out = list(values)
    for v in values:
        for variant in (_retyped(v, int), _retyped(v, float)):
            if variant is not None:  # never equal to v as text ([1] == [1.0] in Python)
                out.append(variant)
    return out


def _retyped(value, kind):
    """value with every integral number made `kind` (None when that changes nothing)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, (int, float)):
        if not float(value).is_integer() or isinstance(value, kind):
            return None
        try:
            return kind(value)
        except (OverflowError, ValueError):
            return None
    if isinstance(value, list):
        items = [_retyped(v, kind) for v in value]
        return None if all(i is None for i in items) else [v if i is None else i for v, i in zip(value, items)]
    if isinstance(value, dict):
        items = {k: _retyped(v, kind) for k, v in value.items()}
        return None if all(i is None for i in items.values()) else {
            k: value[k] if i is None else i for k, i in items.items()}
    return None


def _positive(node: Node) -> Node:
    s = node.schema
    if isinstance(s, dict) and any(k in s for k in _DECIDED):
        return Node({k: v for k, v in s.items() if k not in _DECIDED}, node.ptr, node.base)
    return node
