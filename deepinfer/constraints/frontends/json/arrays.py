"""Arrays of a normalized JSON Schema -> IR.

Owns `prefixItems` (and draft-07 tuple `items`), `items`, `minItems`/`maxItems`,
`contains` with `minContains` (as "some element also satisfies C", exact with
no upper bound), and `uniqueItems` where it holds by construction (at most one
element, or distinct values from a small finite set, `contains` counted over
each order) or else where it is left to the matcher (the UNIQUE_NOTE).

`uniqueItems` is decided before `contains`: every array with both goes through
`_unique`, which either builds the orders itself or notes the matcher (and
then lowers `contains` as usual), so neither keyword drops the other. Item
sets are enumerated from the item schema's own keywords (enum/const, boolean,
null, integer ranges, one-value numbers, empty strings/objects/arrays, and the
branches of anyOf/oneOf), each value checked with `jsonschema`: up to
MAX_UNIQUE_VALUES values the orders are the grammar (no dead ends); up to
MAX_COUNTED_VALUES (short arrays of such values too) the count still makes
`minItems` above it unsatisfiable (NOTHING) and caps `maxItems` for the
matcher, so no `,` opens an item when every value is taken. Left to the
matcher, a started item whose every completion is a value already used (say
`"a` when "a" is taken and "ab" is not a value) is refused where that becomes
so (unique_tracker.py, unique_forced.py).
Knows nothing about objects, scalars or refs.
"""

from __future__ import annotations

import itertools
import math

from deepinfer.constraints import ir
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import Expr, alt, optional, repeat, seq

from .merge import canon, type_set
from .order import META
from .pattern import PatternError, parse_pattern
from .negation import bound_written_at
from .refs import Node
from .contains import lower_contains
from .text import value_text
from .words import spell_out
from .lowering import Lowering


UNIQUE_NOTE = "uniqueItems enforced by the matcher (distinct item values) at"
MAX_UNIQUE_VALUES = 5  # uniqueItems over a finite item set: all orders of up to this many values
# (326 sequences; 6 values made 1,957, past the NFA-state limit with the default whitespace)
MAX_MIN_ITEMS = 100_000   # item rule repeated this many times at most (_counts_in_reach)
MAX_ITEMS_SPAN = 4_096    # optional item rules nested in all (one span of 4,096: ~6 s to compile)
MAX_MIN_CONTAINS = 1_000  # matches of `contains` spelled out at most
MAX_COUNTED_VALUES = 64  # item sets enumerated (each value validated) to count them: minItems, maxItems


def lower_array(lw: Lowering, d: dict, node: Node) -> Expr:
    prefix_nodes: list[Node] = d.get("prefixItems", [])
    rest_node: Node | None = d.get("items")
    prefix = [lw.lower(n) for n in prefix_nodes]
    rest = lw.lower(rest_node) if rest_node is not None else lw.any_value()
    lo = int(d.get("minItems", 0))
    hi = d.get("maxItems")
    hi = None if hi is None else int(hi)
    for i, p in enumerate(prefix):  # an impossible position caps the length
        if p == ir.NOTHING:
            hi = i if hi is None else min(hi, i)
            break
    if rest == ir.NOTHING:
        hi = len(prefix) if hi is None else min(hi, len(prefix))
    if hi is not None and hi < lo:
        return ir.NOTHING
    d, lo, hi = _counts_in_reach(lw, d, node, lo, hi)
    if d.get("uniqueItems") and (hi is None or hi > 1):  # first: it must not be lost to `contains`
        return _unique(lw, d, node, prefix_nodes, rest_node, prefix, rest, lo, hi)
    return _plain(lw, d, node, prefix, rest, lo, hi)


def _counts_in_reach(lw: Lowering, d: dict, node: Node, lo: int, hi: int | None):
    """Fail closed on counts no grammar of ours can spell in time: a minimum repeats the item
    rule that many times, a bounded span nests that many optional rules (maxItems 2,000 compiles
    in ~1.5 s, 10,000 took 37 s; spans are summed over the schema, whose arrays all cost),
    `minContains` copies the match N times (3,000: ~7 s). A skip (strict=False) drops the bound
    (the minimum, or the span's maximum: more arrays, never fewer checks on the items)."""
    if lo > MAX_MIN_ITEMS:
        lw.unsupported(bound_written_at(d, node, "minItems"), "minItems",
                       f"minItems above {MAX_MIN_ITEMS:,} is not enforced")
        lo = 0
    spans = lw.spans = lw.spans + (0 if hi is None else hi - lo)
    if hi is not None and spans > MAX_ITEMS_SPAN:  # the whole schema's: each costs compile time
        lw.unsupported(bound_written_at(d, node, "maxItems"), "maxItems",
                       f"maxItems spans (maxItems - minItems) above {MAX_ITEMS_SPAN:,} in all are not enforced")
        lw.spans -= hi - lo
        hi = None
    if "contains" in d and int(d.get("minContains", 1)) > MAX_MIN_CONTAINS:
        lw.unsupported(f"{node.ptr}/minContains", "minContains",
                       f"minContains above {MAX_MIN_CONTAINS:,} is not enforced")
        d = {**d, "minContains": 1}  # a copy: normalized dicts are shared
    return d, lo, hi


def _plain(lw: Lowering, d: dict, node: Node, prefix, rest, lo, hi) -> Expr:
    """The array without `uniqueItems` (enforced elsewhere, or not asked)."""
    if "contains" in d:
        return _contains(lw, d, node, prefix, rest, lo, hi)
    return seq(lw.ws.open("["), elements(lw, prefix, rest, lo, hi), lw.ws.close("]"))


def elements(lw: Lowering, prefix: list[Expr], rest: Expr, lo: int, hi: int | None) -> Expr:
    """Comma-separated elements: prefix[i] at position i, then `rest`; count in [lo, hi]."""
    comma = lw.ws.comma
    k = len(prefix)

    def tail(i: int) -> Expr:  # elements at positions >= i, each preceded by a comma
        if hi is not None and i >= hi:
            return ir.EMPTY
        if i < k:
            present = seq(comma, prefix[i], tail(i + 1))
            return present if i < lo else optional(present)
        return repeat(seq(comma, rest), max(lo - i, 0), None if hi is None else hi - i)

    if hi == 0:
        return ir.EMPTY
    first = seq(prefix[0] if k else rest, tail(1))
    tail = None  # noqa: F841 - a recursive closure is a cycle that kept the Lowerer alive until a GC pass
    return first if lo > 0 else optional(first)


def _contains(lw: Lowering, d: dict, node: Node, prefix, rest, lo, hi) -> Expr:
    if int(d.get("minContains", 1)) == 0 and "maxContains" not in d and "_contains_more" not in d:
        # contains asks nothing
        return seq(lw.ws.open("["), elements(lw, prefix, rest, lo, hi), lw.ws.close("]"))
    return lower_contains(lw, d, node, list(d.get("prefixItems", [])), d.get("items"), lo, hi)


def _unique(lw: Lowering, d: dict, node: Node, prefix_nodes, rest_node, prefix, rest, lo, hi) -> Expr:
    """Distinct items: every order of a small finite item set, else the matcher (or refused)."""
    ptr = f"{node.ptr}/uniqueItems"
    values = _finite_values(lw, rest_node) if not prefix_nodes and rest_node is not None else None
    if values is not None and lo > len(values):  # minItems distinct items of fewer values
        return ir.NOTHING  # (the lowerer reports an unsatisfiable schema; a branch is dropped)
    if values is not None and len(values) <= MAX_UNIQUE_VALUES:
        return _orders(lw, d, values, lo, hi)
    if values is None and not prefix_nodes and rest_node is not None:
        # arrays of a few values are counted too, never spelled out as orders (their texts are
        # long: five [1,2]-like items in every order passed the NFA-state limit)
        values = _finite_values(lw, rest_node, arrays=True)
        if values is not None and lo > len(values):
            return ir.NOTHING
    if values is not None and len(values) <= MAX_COUNTED_VALUES:  # no more items than values
        hi = len(values) if hi is None else min(hi, len(values))
    count = _integer_range_count(lw, rest_node) if values is None and not prefix_nodes else None
    if count is not None:  # too many integers to list, but counted: no more items than them
        if lo > count:
            return ir.NOTHING
        hi = count if hi is None else min(hi, count)
    if lw.unique_matcher:
        # the matcher remembers item values (constraints/unique.py): the grammar only has the items
        lw.note(f"{UNIQUE_NOTE} {ptr}")
    else:
        lw.unsupported(ptr, "uniqueItems", "items are not a small finite set of values, so distinct "
                                           "elements cannot be guaranteed by the grammar")
    return _plain(lw, d, node, prefix, rest, lo, hi)


def _orders(lw: Lowering, d: dict, values: list, lo: int, hi: int | None) -> Expr:
    """Every order of distinct `values` with a length in [lo, hi] and, with `contains`, a count of
    matching items in [minContains, maxContains]: exact, and each prefix has a completion."""
    counts = _contains_counts(lw, d, values)
    texts = [value_text(v, lw.ws, not lw.draft.boolean_exclusive) for v in values]
    top = len(texts) if hi is None else min(hi, len(texts))
    seqs = []
    for n in range(lo, top + 1):
        for perm in itertools.permutations(range(len(texts)), n):
            if counts is not None and not counts[0] <= sum(counts[2][i] for i in perm) <= counts[1]:
                continue
            items = []
            for j, idx in enumerate(perm):
                if j:
                    items.append(lw.ws.comma)
                items.append(texts[idx])
            seqs.append(seq(*items))
    if not seqs:
        return ir.NOTHING
    return seq(lw.ws.open("["), alt(*seqs), lw.ws.close("]"))


def _contains_counts(lw: Lowering, d: dict, values: list):
    """(min, max, [value i satisfies `contains`]) or None without `contains`."""
    if "contains" not in d:
        return None
    if "_contains_more" in d:  # several contains over the orders of distinct values: not counted here
        lw.unsupported(f"{d['_contains_more'][0][0].ptr}", "contains",
                       "several `contains` next to uniqueItems over a finite item set are not enforced")
    need = int(d.get("minContains", 1))
    most = d.get("maxContains")
    most = len(values) if most is None else int(most)
    return need, most, [lw.valid(v, d["contains"]) for v in values]


def _finite_values(lw: Lowering, node: Node, arrays: bool = False):
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


def _integer_range_count(lw: Lowering, node: Node | None) -> int | None:
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
