"""`anyOf`, `oneOf`, `not` and `if`/`then`/`else` as unions of normalized schemas.

Owns the boolean algebra: a composite schema becomes a list of alternatives
(normalized dicts, see json_normalize) whose union is exactly its valid set.
`oneOf` branch i is `base ∧ b_i ∧ ¬b_j` for every j not provably disjoint from
it (json_disjoint); `if` becomes `(c ∧ then) ∨ (¬c ∧ else)`; `not` is
json_negation's. Knows nothing about IR beyond handing alternatives back to
the Lowerer.
"""

from __future__ import annotations


from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt

from .disjoint import disjoint
from .negation import MAX_ALTERNATIVES, Negation
from .order import ANY_OF_POS, BRANCH_KEYS, COND_POS, META, ONE_OF_POS, branch_prefix, place
from .refs import Node
from .unevaluated import UNEVAL, credit
from .lowering import Lowering


_COMPOSITE = ("anyOf", "_oneOfs", "not", "_conds")


MAX_NOT_DEPTH = 32  # negations lowered inside negations: deeper is a $ref cycle through `not`


class Composition:
    def __init__(self, lowerer: Lowering):
        self.lw = lowerer
        self.negation = Negation(lowerer)
        self._not_depth = 0  # negations being lowered inside one another

    def lower(self, d: dict, node: Node) -> Expr:
        direct = self._direct(d)
        if direct is not None:
            return direct
        alts = [{k: v for k, v in d.items() if k not in _COMPOSITE and k not in BRANCH_KEYS}]
        if "not" in d:
            if self._not_depth >= MAX_NOT_DEPTH:  # `{"not": {"$ref": "#"}}` negates itself forever
                self.lw.unsupported(f"{node.ptr}/not", "not", "a negation that refers back to itself "
                                                               "(through $ref) is not enforced")
            else:
                alts = self._each(alts, lambda a: self.negation.negate(a, d["not"], f"{node.ptr}/not"), node)
        self._not_depth += "not" in d
        try:
            return self._lower_rest(d, node, alts)
        finally:
            self._not_depth -= "not" in d

    def _lower_rest(self, d: dict, node: Node, alts: list) -> Expr:
        for cond in d.get("_conds", []):
            at = branch_prefix(d, COND_POS, cond)
            alts = self._each(alts, lambda a, c=cond, at=at: self.if_then_else(a, c, node, at), node)
        if "anyOf" in d:
            at = d.get(ANY_OF_POS)
            if UNEVAL in d and len(d["anyOf"]) > 1:
                self.lw.note(f"{node.ptr or '/'}/unevaluatedProperties: a property only another matching "
                             f"anyOf branch evaluates counts as unevaluated (sound, not exact)")
            alts = self._each(alts, lambda a: [self._credit(self.lw.merged(a, place(self.lw.normalize(b), at, i), b),
                                                            b) for i, b in enumerate(d["anyOf"])], node)
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
            if not all(disjoint(self.lw, normal[i], normal[j])
                       for i in range(len(normal)) for j in range(i + 1, len(normal))):
                return None
        else:
            return None
        mark = self.lw.empty_mark()
        expr = alt(*(e for e in (self.lw.lower(b) for b in branches) if e != ir.NOTHING)) or ir.NOTHING
        if expr == ir.NOTHING and branches:  # no branch has a valid value: blame the keyword
            self.lw.forgive_empty(mark)
            self.lw.blame_empty(branches[0].ptr.rsplit("/", 1)[0])
        return expr

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
        alts = [self._credit(mine, branches[i])]
        for j, other in enumerate(branches):
            if j == i:
                continue
            theirs = self.lw.merged(base, self.lw.normalize(other), other)
            alts = [y for a in alts for y in
                    ([a] if disjoint(self.lw, a, theirs) else self.negation.negate(a, other, f"{node.ptr}/oneOf/{j}"))
                    if y is not False]
        return alts

    # ------------------------------------------------------------ if / then
    def if_then_else(self, d: dict, conditional: tuple, node: Node, at: tuple | None = None) -> list:
        cond, then, other = conditional
        yes = self._credit(self.lw.merged(d, place(self.lw.normalize(cond), at, 0), cond), cond)
        if then is not None:
            yes = self._credit(self.lw.merged(yes, place(self.lw.normalize(then), at, 1), then), then)
        noes = self.negation.negate(d, cond, f"{cond.ptr}")
        if other is not None:
            noes = [self._credit(self.lw.merged(n, place(self.lw.normalize(other), at, 2), other), other)
                    for n in noes]
        return [yes, *noes]

    def _credit(self, d, branch: Node):
        """d with what `branch` evaluates credited to its unevaluatedProperties markers."""
        return credit(d, branch, self.lw.refs.resolve)
