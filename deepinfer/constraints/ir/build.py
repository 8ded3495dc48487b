"""The IR's smart constructors: seq, alt, repeat, optional and literal.

They flatten and simplify (ε and the empty language absorbed, adjacent
literals merged, duplicate alternatives dropped) so front ends can compose
freely. Split out of ir.py, which re-exports them as `ir.seq` etc. Knows only
the node classes (ir_nodes.py), not grammars or printing.
"""

from __future__ import annotations

from .nodes import EMPTY, NOTHING, Alt, Expr, Literal, Repeat, Seq

MAX_FLATTEN = 64  # longer sequences nest: a chain built one item at a time (an object's optional
# properties) was re-flattened at each step, quadratic (1,000 properties: refused by the lowering
# budget after 2.9 s; nested, compiled in 2.1 s)


def seq(*items: Expr) -> Expr:
    # class checks, not `== NOTHING`: a Python-level __eq__ per item was most of this call
    if len(items) == 2:  # the common case (tries, chains): same result as the general path
        a, b = items
        ca, cb = a.__class__, b.__class__
        if ca is not Seq:
            if cb is Seq:
                if not b.items:  # x ε = x
                    return a
            elif (ca is Alt and not a.items) or (cb is Alt and not b.items):
                return NOTHING
            elif ca is Literal and cb is Literal:
                return Literal(a.text + b.text)
            else:
                return Seq(items)
    flat: list[Expr] = []
    for item in items:
        cls = item.__class__
        if cls is Seq and len(item.items) <= MAX_FLATTEN:
            flat.extend(item.items)
        elif cls is Alt and not item.items:
            return NOTHING
        else:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    if not flat:
        return EMPTY
    for i in range(len(flat) - 1):
        if flat[i].__class__ is Literal and flat[i + 1].__class__ is Literal:
            flat = _merge_literals(flat)
            return flat[0] if len(flat) == 1 else Seq(tuple(flat))
    return Seq(tuple(flat))


def alt(*items: Expr) -> Expr:
    if len(items) == 2:  # the common cases: same result as the general path
        a, b = items
        if a.__class__ is not Alt:
            if b.__class__ is not Alt:
                return a if a is b or (a._h == b._h and a == b) else Alt(items)
            if not b.items:  # x | nothing = x
                return a
    elif len(items) == 1 and items[0].__class__ is not Alt:
        return items[0]
    flat: dict[Expr, None] = {}  # ordered set: dedup by cached hash, not pairwise ==
    for item in items:
        if isinstance(item, Alt):
            flat.update(dict.fromkeys(item.items))
        else:
            flat[item] = None
    if len(flat) == 1:
        return next(iter(flat))
    return Alt(tuple(flat))


def repeat(item: Expr, min: int = 0, max: int | None = None) -> Expr:
    if max is not None and max < min:
        return NOTHING
    if max == 0 or (item.__class__ is Seq and not item.items):
        return EMPTY
    if min == max == 1:
        return item
    return Repeat(item, min, max)


def optional(item: Expr) -> Expr:
    return repeat(item, 0, 1)


def literal(text: str) -> Expr:
    return Literal(text) if text else EMPTY


def _merge_literals(items: list[Expr]) -> list[Expr]:
    """Adjacent literals joined into one (one new node per run; a lone literal kept as is)."""
    merged: list[Expr] = []
    run: list[Expr] = []
    for item in items + [None]:
        if item.__class__ is Literal:
            run.append(item)
            continue
        if run:
            merged.append(run[0] if len(run) == 1 else Literal("".join(r.text for r in run)))
            run = []
        if item is not None:
            merged.append(item)
    return merged

