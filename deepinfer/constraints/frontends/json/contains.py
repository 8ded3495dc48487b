"""Arrays with `contains` (and minContains / maxContains) -> IR.

Owns the count of matching items as a small machine over (position, matches so far of each
`contains`: allOf members and a negated `items` add more, json_merge.containments). For each
`contains` an item is a match (its schema and that `contains`) or, when maxContains bounds
the matches, a non-match (its schema and not that `contains`); without maxContains an item
need not say, so "at least minContains" is exact without negating `contains`. Positions past
the prefix and minItems loop when maxItems does not bound them. Works with prefixItems,
minItems and maxItems. Knows nothing about uniqueItems (json_arrays' orders).
"""

from __future__ import annotations


from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, repeat, seq

from .merge import containments, synthetic
from .refs import Node
from .lowering import Lowering


MAX_STATES = 20_000  # (position, matches) pairs unrolled
MAX_CONTAINS = 3  # `contains` counted together (2^n kinds of item)


def lower_contains(lw: Lowering, d: dict, node: Node, prefix_nodes: list[Node], rest_node: Node | None,
                   lo: int, hi: int | None) -> Expr:
    return _Contains(lw, d, node, prefix_nodes, rest_node, lo, hi).expr()


class _Contains:
    def __init__(self, lw, d, node, prefix_nodes, rest_node, lo, hi):
        self.lw, self.d, self.node = lw, d, node
        self.prefix_nodes, self.rest_node = prefix_nodes, rest_node
        self.lo, self.hi = lo, hi
        # per contains: (node, at least, at most or None)
        self.conds = [(c, int(low), None if high is None else int(high)) for c, low, high in containments(d)]
        self.k = len(prefix_nodes)
        self.loop_at = max(self.k, lo)  # from here on (maxItems unset) the position no longer matters
        self.comma = lw.ws.comma
        self._items: dict[tuple, Expr] = {}
        self._states: dict[tuple, Expr] = {}

    def expr(self) -> Expr:
        if len(self.conds) > MAX_CONTAINS:
            self.lw.unsupported(f"{self.node.ptr}/contains", "contains",
                                f"more than {MAX_CONTAINS} `contains` on one array are not enforced")
            return ir.NOTHING
        if any(high is not None and high < low for _, low, high in self.conds):
            return ir.NOTHING
        counts = 1
        for _, low, high in self.conds:
            counts *= (high if high is not None else low) + 1
        span = (self.hi if self.hi is not None else self.loop_at + 1) * counts
        if span > MAX_STATES:
            where = f"{self.node.ptr}/maxItems" if self.hi is not None else f"{self.node.ptr}/contains"
            self.lw.unsupported(where, where.rsplit("/", 1)[-1],
                                f"contains counted over {span:,} (position, matches) pairs is not enforced")
            return ir.NOTHING
        body = self._state(0, tuple(0 for _ in self.conds))
        if body == ir.NOTHING:
            return ir.NOTHING
        return seq(self.lw.ws.open("["), body, self.lw.ws.close("]"))

    # ------------------------------------------------------------- items
    def _item(self, i: int, kinds: tuple) -> Expr:
        """Item at position i; kinds[j]: "hit" (matches contains j), "miss" (does not), "any"."""
        at = min(i, self.k)  # every position past the prefix has the same schema
        key = (at, kinds)
        got = self._items.get(key)
        if got is None:
            base = self.prefix_nodes[i] if i < self.k else self.rest_node
            parts = [] if base is None else [base]
            for (contains, _, _), kind in zip(self.conds, kinds):
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

    def _moves(self, m: tuple) -> list[tuple[tuple, tuple]]:
        """(item kinds, matches after it) from matches m: each contains either counts the item
        (up to minContains without maxContains, up to maxContains with it) or does not."""
        per = []
        for (_, low, high), count in zip(self.conds, m):
            if high is None:
                per.append([("any", count)] + ([("hit", count + 1)] if count < low else []))
            else:
                per.append([("miss", count)] + ([("hit", count + 1)] if count < high else []))
        out = [((), ())]
        for options in per:
            out = [(kinds + (kind,), after + (c,)) for kinds, after in out for kind, c in options]
        return out

    # ------------------------------------------------------------ states
    def _state(self, i: int, m: tuple) -> Expr:
        """Items from position i on, with matches m so far."""
        if self.hi is None and i >= self.loop_at:
            return self._loop(m, i == 0)
        key = (i, m)
        got = self._states.get(key)
        if got is None:
            got = self._states[key] = self._build(i, m)
        return got

    def _done(self, m: tuple) -> bool:
        return all(count >= low for (_, low, _), count in zip(self.conds, m))

    def _build(self, i: int, m: tuple) -> Expr:
        options = [ir.EMPTY] if i >= self.lo and self._done(m) else []
        if self.hi is None or i < self.hi:
            comma = ir.EMPTY if i == 0 else self.comma
            for kinds, after in self._moves(m):
                item = self._item(i, kinds)
                if item != ir.NOTHING:
                    options.append(seq(comma, item, self._state(i + 1, after)))
        return _alt(options)

    def _loop(self, m: tuple, first: bool) -> Expr:
        """Positions past the prefix and minItems without maxItems: items that count for no
        contains repeat, then either the end or an item that counts (which raises m)."""
        key = ("loop", m, first)
        got = self._states.get(key)
        if got is None:
            i = self.loop_at
            moves = self._moves(m)
            same = _alt([self._item(i, kinds) for kinds, after in moves if after == m])
            onward = [(self._item(i, kinds), after) for kinds, after in moves if after != m]
            ends = [ir.EMPTY] if self._done(m) else []
            if first:  # no item yet: the first has no comma
                got = _alt([*ends, *([seq(same, self._loop(m, False))] if same != ir.NOTHING else []),
                            *(seq(item, self._loop(after, False)) for item, after in onward if item != ir.NOTHING)])
            else:
                loop = repeat(seq(self.comma, same)) if same != ir.NOTHING else ir.EMPTY
                rest = _alt([*ends, *(seq(self.comma, item, self._loop(after, False))
                                      for item, after in onward if item != ir.NOTHING)])
                got = ir.NOTHING if rest == ir.NOTHING else seq(loop, rest)
            self._states[key] = got
        return got


def _alt(parts: list[Expr]) -> Expr:
    parts = [p for p in parts if p != ir.NOTHING]
    return alt(*parts) if parts else ir.NOTHING
