"""The finite value sets of an array's item schema: listed, so that `uniqueItems` can be counted.

Owns `finite_values(lw, node)`, the distinct values valid against an item schema when they can
be listed (enum/const, booleans, null, integer ranges, one-value numbers, pattern alternatives,
empty strings/objects/arrays, closed objects of such members, short arrays of such values, the
branches of anyOf/oneOf), and `integer_range_count` for integer ranges too long to list.
Candidates come from the schema's own keywords (a superset); `jsonschema` keeps the valid ones,
so a list is exact. arrays.py spells out the orders of a small set and counts a larger one.
Knows nothing about how arrays are lowered.
"""

from __future__ import annotations

import math

from deepinfer.constraints.errors import ConstraintError

from .lowering import Lowering
from .merge import canon, type_set
from .order import META
from .pattern import PatternError, parse_pattern
from .refs import Node
from .words import spell_out

MAX_COUNTED_VALUES = 64  # item sets enumerated (each value validated) to count them: minItems, maxItems


def finite_values(lw: Lowering, node: Node, arrays: bool = False):
    """The distinct values valid against `node` when they can be listed (an enum, or at most
    MAX_COUNTED_VALUES candidates), else None. Candidates come from the schema's own keywords (a
    superset), then `jsonschema` keeps the valid ones, so the list is exact. `arrays`: short
    arrays of such values too (_short_arrays)."""
    candidates = _candidates(lw, node, 0, arrays)
    if candidates is None:
        return None
    try:
        vals = [v for v in candidates if lw.valid(v, node)]
    except ConstraintError:  # a schema jsonschema cannot evaluate: leave it to the usual path
        return None
    return list({canon(v): v for v in vals}.values())


def _candidates(lw: Lowering, node: Node, depth: int, arrays: bool = False):
    """A superset of the values valid against `node`, or None when not small and finite."""
    d = lw.normalize(node)
    if d is False:
        return []
    if d is True or depth > 8:
        return None
    if "enum" in d:
        return list(d["enum"])
    own = _typed_candidates(lw, d, depth, arrays)
    if own is not None:
        return own
    if "anyOf" in d:  # every valid value is valid against one branch
        return _union(lw, d["anyOf"], depth, arrays)
    for branches in d.get("_oneOfs", []):
        got = _union(lw, branches, depth, arrays)
        if got is not None:
            return got
    return None


def _union(lw: Lowering, branches, depth: int, arrays: bool = False):
    out: list = []
    for b in branches:
        got = _candidates(lw, b, depth + 1, arrays)
        if got is None or len(out) + len(got) > MAX_COUNTED_VALUES:
            return None
        out += got
    return out


def _typed_candidates(lw: Lowering, d: dict, depth: int, arrays: bool = False):
    """Candidates from `type` and the bounds next to it; None if some allowed type has many."""
    out: list = []
    for t in type_set(d):
        if t == "null":
            out.append(None)
        elif t == "boolean":
            out += [True, False]
        elif t == "string" and _num(d.get("maxLength")) == 0:
            out.append("")
        elif t == "string" and (spelled := _pattern_strings(d)) is not None:
            out += spelled
        elif t == "object" and (_num(d.get("maxProperties")) == 0 or _closed_empty(d)):
            out.append({})
        elif t == "object" and (members := _closed_objects(lw, d, depth, arrays)) is not None:
            out += members
        elif t == "array" and (_num(d.get("maxItems")) == 0 or _no_items(d)):
            out.append([])
        elif t == "array" and arrays and (short := _short_arrays(lw, d, depth)) is not None:
            out += short
        elif t in ("integer", "number"):
            got = _numbers(d, integral=t == "integer" and "number" not in type_set(d))
            if got is None:
                return None
            out += got
        else:
            return None
        if len(out) > MAX_COUNTED_VALUES:
            return None
    return out


def _numbers(d: dict, integral: bool):
    lo, hi = _num(d.get("minimum")), _num(d.get("maximum"))
    if lo is not None and lo == hi:
        return [lo]  # one value (the filter drops it if it is not an integer where one is asked)
    if not integral:
        return None
    span = _integer_span(d)
    if span is None or span[1] - span[0] + 1 > MAX_COUNTED_VALUES:
        return None  # (a bound the normalizer kept in another form leaves it unbounded: no list)
    return list(range(span[0], span[1] + 1))


def _integer_span(d: dict) -> tuple[int, int] | None:
    """(first, last) integer the bounds of `d` allow, or None when a side is unbounded."""
    lo, hi = _num(d.get("minimum")), _num(d.get("maximum"))
    lo_x, hi_x = _num(d.get("exclusiveMinimum")), _num(d.get("exclusiveMaximum"))
    firsts = ([math.ceil(lo)] if lo is not None else []) + ([math.floor(lo_x) + 1] if lo_x is not None else [])
    lasts = ([math.floor(hi)] if hi is not None else []) + ([math.ceil(hi_x) - 1] if hi_x is not None else [])
    return (max(firsts), min(lasts)) if firsts and lasts else None


def integer_range_count(lw: Lowering, node: Node | None) -> int | None:
    """How many integers an item schema of only `type: integer` and bounds allows (a range too
    big to list, such as 0..1000), else None."""
    if node is None:
        return None
    d = lw.normalize(node)
    if not isinstance(d, dict) or type_set(d) != {"integer"}:
        return None
    bounds = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    if any(k not in bounds and k != "type" and k not in META for k in d):
        return None  # another keyword (multipleOf, not, ...): not a plain range
    if isinstance(d.get("exclusiveMinimum"), bool) or isinstance(d.get("exclusiveMaximum"), bool):
        return None  # draft-04 flags: left to the matcher
    span = _integer_span(d)
    return None if span is None else max(span[1] - span[0] + 1, 0)


def _pattern_strings(d: dict):
    """The strings a pattern of `d` allows when they are at most MAX_COUNTED_VALUES (`^(GET|PUT)$`),
    else None. Any one pattern gives a superset of the strings the item's grammar can generate
    (the caller keeps the valid ones). Read as the string lowering reads it (json_pattern's sound
    subset: `$` ends the string, without Python's optional final newline), so the item set is
    what generation can write: with the exact set, a fourth item of `^[a-c]$` opened after three
    and waited for a "a\\n" the item grammar cannot write."""
    for p in ([d["pattern"]] if isinstance(d.get("pattern"), str) else []) + list(d.get("_patterns", [])):
        try:
            got = spell_out(parse_pattern(p), MAX_COUNTED_VALUES)
        except (PatternError, RecursionError):
            continue
        if got is not None:
            return got
    return None


def _num(v):
    """A finite number keyword's value, else None (absent or malformed: no candidates from it)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def _closed_objects(lw: Lowering, d: dict, depth: int, arrays: bool = False):
    """Objects of only declared members, each absent (when optional) or one of its member's
    candidates, in declaration order (`{"id": {"enum": [1, 2]}}` with additionalProperties
    false): None when some member has many values or the product passes MAX_COUNTED_VALUES."""
    props = d.get("properties")
    if not isinstance(props, dict) or not _closed(d):
        return None
    required = set(d.get("required", ()))
    out: list = [{}]
    for name, sub in props.items():
        values = _candidates(lw, sub, depth + 1, arrays)
        if values is None:
            return None
        grown = [] if name in required else list(out)
        grown += [{**o, name: v} for o in out for v in values]
        if len(grown) > MAX_COUNTED_VALUES:
            return None
        out = grown
    return out


def _short_arrays(lw: Lowering, d: dict, depth: int):
    """Arrays of up to `maxItems` items (of distinct items: up to as many as there are values),
    each one of the `items` candidates (`{"items": {"type": "boolean"}, "maxItems": 1}`: [],
    [true], [false]), or None without such a bound, with prefixItems, or past
    MAX_COUNTED_VALUES. Why: counted, an array of such items is capped at that many distinct
    items, and a minItems above it is unsatisfiable at compile time; uncounted, the matcher
    reached the last distinct item with a `,` allowed and no new item to write after it."""
    most, items = _num(d.get("maxItems")), d.get("items")
    if d.get("prefixItems") or not isinstance(items, Node):
        return None
    values = _candidates(lw, items, depth + 1, arrays=True)
    if values is None:
        return None
    if d.get("uniqueItems") is True:
        most = len(values) if most is None else min(most, len(values))
    if most is None:
        return None
    if not values:
        return [[]]  # (and no loop over a huge maxItems)
    out: list = [[]]
    layer: list = [[]]
    for _ in range(int(most)):
        layer = [a + [v] for a in layer for v in values]
        out += layer
        if len(out) > MAX_COUNTED_VALUES:
            return None
    return out


def _no_items(d: dict) -> bool:
    """`items: false` (draft 2020-12 form) and no `prefixItems`: only the empty array."""
    items = d.get("items")
    return not d.get("prefixItems") and isinstance(items, Node) and items.schema is False


def _closed_empty(d: dict) -> bool:
    """No member name is allowed: no properties or patterns, additionalProperties false."""
    return not d.get("properties") and _closed(d)


def _closed(d: dict) -> bool:
    """Only declared member names: no patternProperties, additionalProperties false."""
    extra = d.get("additionalProperties")
    return not d.get("patternProperties") and isinstance(extra, Node) and extra.schema is False
