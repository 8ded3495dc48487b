"""Objects that must hold some member a negated `additionalProperties` or `patternProperties`
asks for.

Owns the `_some_member` markers json_negation puts on an object alternative, each
(names, patterns, value, within): some member whose name is none of `names`, matches none of
`patterns` and matches every pattern of `within` must hold a value valid against `value`. A
negated additionalProperties asks for a member named outside what it declared with a value
its additionalProperties rejects (within: none); a negated patternProperties for a member a
pattern matches with a value that pattern's schema rejects (names, patterns: none). A
declared member can be that member (a variant of it with the extra value schemas, marked in
json_objects' presence bits), else an undeclared one among the additional members after the
declared ones (json_additional builds it from the names left). Several markers are tracked as
a set of satisfied ones; one member may satisfy several. Knows nothing about how declared
members are ordered or counted (json_objects').
"""

from __future__ import annotations

from itertools import combinations

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, repeat, seq

from .additional import additional_member, member_text, name_matches
from .merge import all_of
from .refs import Node
from .text import encode_text
from .lowering import Lowering


MAX_MARKERS = 3  # 2^n satisfied-sets per object position
MAX_COUNTED = 32  # a maxProperties bound on the additional members, unrolled with the markers


def marker_bit(i: int) -> tuple:
    """Presence bit: a member satisfied marker i (never equal to a property name)."""
    return ("some member", i)


class SomeMembers:
    def __init__(self, lw: Lowering, d: dict, node: Node, names: list[str]):
        self.lw, self.d, self.node, self.names = lw, d, node, names
        self.markers = list(d.get("_some_member", []))
        self.ws = lw.ws
        if len(self.markers) > MAX_MARKERS:
            lw.unsupported(f"{node.ptr}/not", "not", f"more than {MAX_MARKERS} negated "
                                                      f"`additionalProperties` at once")
            self.markers = []
        self.all = frozenset(range(len(self.markers)))
        self._additional: dict[frozenset, Expr] = {}
        self._variants: dict[tuple, list] = {}
        self._tails: dict[tuple, Expr] = {}

    def __bool__(self) -> bool:
        return bool(self.markers)

    def satisfied(self, bits: frozenset) -> frozenset:
        return frozenset(i for i in self.all if marker_bit(i) in bits)

    # ------------------------------------------------------------ members
    def declared_variants(self, name: str, schemas: list[Node], bits: frozenset) -> list[tuple[Expr, frozenset]]:
        """(member, the bits it sets) for declared `name` satisfying a non-empty set of the markers
        still open; `schemas` are what its value must satisfy anyway."""
        open_ = tuple(i for i in sorted(self.all - self.satisfied(bits)) if self._names_allowed(i, name))
        key = (name, open_)
        got = self._variants.get(key)  # the presence machine asks once per state, lowering is not free
        if got is not None:
            return got
        out = self._variants[key] = []
        for size in range(1, len(open_) + 1):
            for chosen in combinations(open_, size):
                values = schemas + [self.markers[i][2] for i in chosen]
                member = member_text(self.lw, encode_text(name), values)
                if member != ir.NOTHING:
                    out.append((member, frozenset(marker_bit(i) for i in chosen)))
        return out

    def _names_allowed(self, i: int, name: str) -> bool:
        names, patterns, _, within = self.markers[i]
        return name not in names and not any(name_matches(p, name) for p in patterns) and \
            all(name_matches(p, name) for p in within)

    def _additional_for(self, chosen: frozenset) -> Expr:
        """An undeclared member satisfying every marker in `chosen`."""
        got = self._additional.get(chosen)
        if got is None:
            d = {k: v for k, v in self.d.items() if k != "_some_member"}
            values = [self.markers[i][2] for i in sorted(chosen)]
            addl = d.get("additionalProperties")
            d["additionalProperties"] = all_of(([addl] if addl is not None else []) + values)
            d["patternProperties"] = {p: all_of([n] + values) for p, n in d.get("patternProperties", {}).items()}
            d["_names_except"] = (tuple(n for i in chosen for n in self.markers[i][0]),
                                  tuple(p for i in chosen for p in self.markers[i][1]),
                                  tuple(p for i in chosen for p in self.markers[i][3]))
            got = self._additional[chosen] = additional_member(self.lw, d, self.node, self.names)
        return got

    # --------------------------------------------------------------- tail
    def tail(self, first: bool, bits: frozenset, lo: int, hi: int | None, plain: Expr) -> Expr:
        """The additional members after the declared ones (`plain`: any one of them), at least
        `lo` (0 or 1) and at most `hi`, at least one per marker the declared members left open."""
        if hi is not None and hi > MAX_COUNTED:
            self.lw.unsupported(f"{self.node.ptr}/maxProperties", "maxProperties",
                                f"maxProperties over {MAX_COUNTED} with a negated additionalProperties")
            hi = None
        return self._tail(first, self.satisfied(bits), hi, lo > 0, plain)

    def _tail(self, first: bool, done: frozenset, left: int | None, need: bool, plain: Expr) -> Expr:
        key = (first, done, left, need)
        got = self._tails.get(key)
        if got is None:
            got = self._tails[key] = self._build_tail(first, done, left, need, plain)
        return got

    def _build_tail(self, first: bool, done: frozenset, left: int | None, need: bool, plain: Expr) -> Expr:
        """first: no member written yet in the object (no comma before the next one); done: the
        markers satisfied; left: members still allowed (None: any); need: one must follow."""
        comma = ir.EMPTY if first else self.ws.comma
        rest = seq(self.ws.comma, plain)
        if done == self.all:  # no marker open: `plain` members, as many as the bounds say
            low = 1 if need else 0
            if left is not None and left < low:
                return ir.NOTHING
            if first:
                some = seq(plain, repeat(rest, 0, None if left is None else left - 1))
                return some if need else ir.optional(some)
            return repeat(rest, low, left)
        if left is not None and left <= 0:
            return ir.NOTHING
        nxt = None if left is None else left - 1
        progress = []
        todo = sorted(self.all - done)
        for size in range(1, len(todo) + 1):
            for chosen in combinations(todo, size):
                member = self._additional_for(frozenset(chosen))
                if member != ir.NOTHING:
                    progress.append(seq(comma, member,
                                        self._tail(False, done | frozenset(chosen), nxt, False, plain)))
        if plain == ir.NOTHING:
            return alt(*progress) if progress else ir.NOTHING
        if left is None:  # members that satisfy no open marker first: a loop, not an unrolling
            if first:
                return alt(*progress, seq(plain, self._tail(False, done, None, False, plain)))
            return seq(repeat(rest), alt(*progress)) if progress else ir.NOTHING
        skip = seq(comma, plain, self._tail(False, done, nxt, False, plain))
        return alt(*progress, skip)
