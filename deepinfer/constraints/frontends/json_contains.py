"""Arrays with `contains` (and minContains / maxContains) -> IR.

Owns the count of matching items as a small machine over (position, matches so far): an item
is a match (its schema and `contains`) or, when maxContains bounds the matches, a non-match
(its schema and not `contains`); without maxContains any item may stand for a non-match, so
"at least minContains" is exact without negating `contains`. Positions past the prefix and
minItems loop when maxItems does not bound them. Works with prefixItems, minItems and
maxItems (json_arrays' elements). Knows nothing about uniqueItems (json_arrays' orders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, repeat, seq

from .json_merge import synthetic
from .json_refs import Node

if TYPE_CHECKING:  # pragma: no cover
    from .json_lowerer import Lowerer

MAX_STATES = 20_000  # (position, matches) pairs unrolled


def lower_contains(lw: "Lowerer", d: dict, node: Node, prefix_nodes: list[Node], rest_node: Node | None,
                   lo: int, hi: int | None) -> Expr:
    return _Contains(lw, d, node, prefix_nodes, rest_node, lo, hi).expr()


class _Contains:
    def __init__(self, lw, d, node, prefix_nodes, rest_node, lo, hi):
        self.lw, self.d, self.node = lw, d, node
        self.prefix_nodes, self.rest_node = prefix_nodes, rest_node
        self.lo, self.hi = lo, hi
        self.need = int(d.get("minContains", 1))
        most = d.get("maxContains")
        self.most = None if most is None else int(most)
        self.k = len(prefix_nodes)
        self.loop_at = max(self.k, lo)  # from here on (maxItems unset) the position no longer matters
        self.comma = lw.ws.comma
        self._items: dict[tuple, Expr] = {}
        self._states: dict[tuple, Expr] = {}

    def expr(self) -> Expr:
        if self.most is not None and self.most < self.need:
            return ir.NOTHING
        span = (self.hi if self.hi is not None else self.loop_at + 1) * ((self.most or self.need) + 1)
        if span > MAX_STATES:
            where = f"{self.node.ptr}/maxItems" if self.hi is not None else f"{self.node.ptr}/minItems"
            self.lw.unsupported(where, where.rsplit("/", 1)[-1],
                                f"contains counted over {span:,} (position, match) pairs is not enforced")
            return ir.NOTHING
        body = self._state(0, 0)
        if body == ir.NOTHING:
            return ir.NOTHING
        return seq(self.lw.ws.open("["), body, self.lw.ws.close("]"))

    # ------------------------------------------------------------- items
    def _schema_at(self, i: int) -> Node | None:
        return self.prefix_nodes[i] if i < self.k else self.rest_node

    def _item(self, i: int, kind: str) -> Expr:
        """Item at position i: "hit" (matches contains), "miss" (does not), "any"."""
        at = min(i, self.k)  # every position past the prefix has the same schema
        key = (at, kind)
        got = self._items.get(key)
        if got is None:
            base = self._schema_at(i)
            contains = self.d["contains"]
            parts = [] if base is None else [base]
            if kind == "hit":
                parts.append(contains)
            elif kind == "miss":
                parts.append(synthetic({"not": contains}, contains))
            if not parts:
                got = self.lw.any_value()
            else:
                got = self.lw.lower(parts[0] if len(parts) == 1 else synthetic({"allOf": parts}, parts[0]))
            self._items[key] = got
        return got

    # ------------------------------------------------------------ states
    def _state(self, i: int, m: int) -> Expr:
        """Items from position i on, with m matches so far (capped at `need` without maxContains)."""
        if self.hi is None and i >= self.loop_at:
            return self._loop(m, i == 0)
        key = (i, m)
        got = self._states.get(key)
        if got is None:
            got = self._states[key] = self._build(i, m)
        return got

    def _can_end(self, i: int, m: int) -> bool:
        return i >= self.lo and m >= self.need

    def _build(self, i: int, m: int) -> Expr:
        options = [ir.EMPTY] if self._can_end(i, m) else []
        if self.hi is None or i < self.hi:
            comma = ir.EMPTY if i == 0 else self.comma
            for kind, m2 in self._moves(m):
                item = self._item(i, kind)
                if item != ir.NOTHING:
                    options.append(seq(comma, item, self._state(i + 1, m2)))
        return _alt(options)

    def _moves(self, m: int) -> list[tuple[str, int]]:
        """(item kind, matches after it) from m matches."""
        if self.most is None:
            return [("any", m), ("hit", min(m + 1, self.need))] if m < self.need else [("any", m)]
        moves = [("miss", m)]
        if m < self.most:
            moves.append(("hit", m + 1))
        return moves

    def _loop(self, m: int, first: bool) -> Expr:
        """Positions past the prefix and minItems without maxItems: non-counting items repeat,
        then either the end or a counting item."""
        key = ("loop", m, first)
        got = self._states.get(key)
        if got is None:
            self._states[key] = ir.NOTHING  # no cycle: each step raises m or ends
            moves = self._moves(m)
            stay = [kind for kind, m2 in moves if m2 == m]
            advance = [(kind, m2) for kind, m2 in moves if m2 != m]
            i = self.loop_at
            same = self._item(i, stay[0]) if stay else ir.NOTHING
            ends = [ir.EMPTY] if m >= self.need else []
            onward = [(self._item(i, kind), m2) for kind, m2 in advance]
            if first:  # no item yet: the first has no comma
                after_same = self._loop(m, False) if same != ir.NOTHING else ir.NOTHING
                got = _alt([*ends, *([seq(same, after_same)] if same != ir.NOTHING else []),
                            *(seq(item, self._loop(m2, False)) for item, m2 in onward if item != ir.NOTHING)])
            else:
                loop = repeat(seq(self.comma, same)) if same != ir.NOTHING else ir.EMPTY
                rest = _alt([*ends, *(seq(self.comma, item, self._loop(m2, False))
                                      for item, m2 in onward if item != ir.NOTHING)])
                got = ir.NOTHING if rest == ir.NOTHING else seq(loop, rest)
            self._states[key] = got
        return got


def _alt(parts: list[Expr]) -> Expr:
    parts = [p for p in parts if p != ir.NOTHING]
    return alt(*parts) if parts else ir.NOTHING
