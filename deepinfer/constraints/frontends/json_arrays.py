"""Arrays of a normalized JSON Schema -> IR.

Owns `prefixItems` (and draft-07 tuple `items`), `items`, `minItems`/`maxItems`,
`contains` with `minContains` (as "some element also satisfies C", exact with
no upper bound), and `uniqueItems` where it holds by construction (at most one
element, or distinct values from a small finite set). Knows nothing about
objects, scalars or refs.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, optional, repeat, seq

from .json_merge import canon, synthetic
from .json_refs import Node
from .json_text import value_text

if TYPE_CHECKING:  # pragma: no cover
    from .json_lowerer import Lowerer

UNIQUE_NOTE = "uniqueItems enforced by the matcher (distinct item values) at"
MAX_UNIQUE_VALUES = 6  # uniqueItems over a finite item set: all orders of up to this many values


def lower_array(lw: "Lowerer", d: dict, node: Node) -> Expr:
    ws, ptr = lw.ws, node.ptr
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
    if "contains" in d:
        return _contains(lw, d, node, prefix, rest, lo, hi)
    if d.get("uniqueItems") and (hi is None or hi > 1):
        return _unique(lw, d, node, prefix_nodes, rest_node, lo, hi)
    return seq(ws.open("["), elements(lw, prefix, rest, lo, hi), ws.close("]"))


def elements(lw: "Lowerer", prefix: list[Expr], rest: Expr, lo: int, hi: int | None) -> Expr:
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


def _contains(lw: "Lowerer", d: dict, node: Node, prefix, rest, lo, hi) -> Expr:
    ptr = f"{node.ptr}/contains"
    need = int(d.get("minContains", 1))
    if "maxContains" in d or prefix or hi is not None or (d.get("uniqueItems") and not lw.unique_matcher):
        lw.unsupported(ptr, "contains", "contains with maxContains, prefixItems, maxItems or "
                                        "uniqueItems is not enforced")
        return seq(lw.ws.open("["), elements(lw, prefix, rest, lo, hi), lw.ws.close("]"))
    if need == 0:
        return seq(lw.ws.open("["), elements(lw, prefix, rest, lo, hi), lw.ws.close("]"))
    rest_node = d.get("items")
    members = [d["contains"]] + ([rest_node] if rest_node is not None else [])
    hit = lw.lower(members[0] if len(members) == 1 else synthetic({"allOf": members}, members[0]))
    if hit == ir.NOTHING:
        return ir.NOTHING
    comma = lw.ws.comma
    # X* C (X* C)^(need-1) X*, written with commas; X includes C, so "at least need" is exact
    body = hit
    for _ in range(need - 1):
        body = seq(body, repeat(seq(comma, rest)), comma, hit)
    before = repeat(seq(rest, comma))
    after = repeat(seq(comma, rest), max(lo - need, 0))
    if lo > need:
        lw.note(f"{node.ptr}/minItems: with contains, the extra items come after the matches")
    return seq(lw.ws.open("["), before, body, after, lw.ws.close("]"))


def _unique(lw: "Lowerer", d: dict, node: Node, prefix_nodes, rest_node, lo, hi) -> Expr:
    ptr = f"{node.ptr}/uniqueItems"
    values = _finite_values(lw, rest_node) if not prefix_nodes and rest_node is not None else None
    if (values is None or len(values) > MAX_UNIQUE_VALUES) and lw.unique_matcher:
        # the matcher remembers item values (constraints/unique.py): the grammar only has the items
        lw.note(f"{UNIQUE_NOTE} {ptr}")
        return seq(lw.ws.open("["), elements(lw, [lw.lower(n) for n in prefix_nodes],
                                             lw.lower(rest_node) if rest_node else lw.any_value(), lo, hi),
                   lw.ws.close("]"))
    if values is None or len(values) > MAX_UNIQUE_VALUES:
        lw.unsupported(ptr, "uniqueItems", "items are not a small finite set of values, so distinct "
                                           "elements cannot be guaranteed by the grammar")
        return seq(lw.ws.open("["), elements(lw, [lw.lower(n) for n in prefix_nodes],
                                             lw.lower(rest_node) if rest_node else lw.any_value(), lo, hi),
                   lw.ws.close("]"))
    texts = [value_text(v, lw.ws) for v in values]
    top = len(texts) if hi is None else min(hi, len(texts))
    seqs = []
    for n in range(lo, top + 1):
        for perm in itertools.permutations(range(len(texts)), n):
            items = []
            for j, idx in enumerate(perm):
                if j:
                    items.append(lw.ws.comma)
                items.append(texts[idx])
            seqs.append(seq(*items))
    if not seqs:
        return ir.NOTHING
    return seq(lw.ws.open("["), alt(*seqs), lw.ws.close("]"))


def _finite_values(lw: "Lowerer", node: Node):
    d = lw.normalize(node)
    if d is False:
        return []
    if d is True:
        return None
    if "enum" in d:
        vals = [v for v in d["enum"] if all(lw.valid(v, s) for s in d["_sources"])]
    elif d.get("type") == frozenset({"boolean"}):
        vals = [True, False]
    elif d.get("type") == frozenset({"null"}):
        vals = [None]
    else:
        return None
    return list({canon(v): v for v in vals}.values())
