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
branches of anyOf/oneOf; array_values.py), each value checked with `jsonschema`: up to
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

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, optional, repeat, seq

from .negation import bound_written_at
from .refs import Node
from .contains import lower_contains
from .text import value_text
from .lowering import Lowering
from .array_values import MAX_COUNTED_VALUES, finite_values, integer_range_count


UNIQUE_NOTE = "uniqueItems enforced by the matcher (distinct item values) at"
MAX_UNIQUE_VALUES = 5  # uniqueItems over a finite item set: all orders of up to this many values
# (326 sequences; 6 values made 1,957, past the NFA-state limit with the default whitespace)
MAX_MIN_ITEMS = 100_000   # item rule repeated this many times at most (_counts_in_reach)
MAX_ITEMS_SPAN = 4_096    # optional item rules nested in all (one span of 4,096: ~6 s to compile)
MAX_MIN_CONTAINS = 1_000  # matches of `contains` spelled out at most


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
    values = finite_values(lw, rest_node) if not prefix_nodes and rest_node is not None else None
    if values is not None and lo > len(values):  # minItems distinct items of fewer values
        return ir.NOTHING  # (the lowerer reports an unsatisfiable schema; a branch is dropped)
    if values is not None and len(values) <= MAX_UNIQUE_VALUES:
        return _orders(lw, d, values, lo, hi)
    if values is None and not prefix_nodes and rest_node is not None:
        # arrays of a few values are counted too, never spelled out as orders (their texts are
        # long: five [1,2]-like items in every order passed the NFA-state limit)
        values = finite_values(lw, rest_node, arrays=True)
        if values is not None and lo > len(values):
            return ir.NOTHING
    if values is not None and len(values) <= MAX_COUNTED_VALUES:  # no more items than values
        hi = len(values) if hi is None else min(hi, len(values))
    count = integer_range_count(lw, rest_node) if values is None and not prefix_nodes else None
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
