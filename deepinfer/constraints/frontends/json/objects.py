"""Objects of a normalized JSON Schema -> IR.

Owns the member grammar: declared properties in declaration order (required
ones present, optional ones omittable), then additional members (one such
member is json_additional's: which undeclared names and values are allowed).
Presence constraints (`minProperties`/`maxProperties`, `dependentRequired`,
required-only `dependentSchemas`, and `not: {required}` from composition as
`_forbid`) are enforced by a small state machine over the declared
properties, unrolled into the IR. Knows nothing about arrays, scalars or refs.
"""

from __future__ import annotations


from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, optional, repeat, seq

from .additional import additional_member, member_text, name_matches
from .some_member import SomeMembers
from .order import META
from .negation import bound_written_at
from .refs import Node
from .text import encode_text
from .lowering import Lowering


MAX_COUNTED_OPTIONAL = 10  # min/maxProperties > 1 unroll 2^k paths over this many optional members


def lower_object(lw: Lowering, d: dict, node: Node) -> Expr:
    return _ObjectLowering(lw, d, node).expr()


class _ObjectLowering:
    def __init__(self, lw: Lowering, d: dict, node: Node):
        self.lw, self.d, self.node, self.ptr = lw, d, node, node.ptr
        self.ws = lw.ws
        self.props: dict[str, Node] = d.get("properties", {})
        self.required = list(d.get("required", []))
        self.pp: dict[str, Node] = d.get("patternProperties", {})
        self.addl: Node | None = d.get("additionalProperties")
        self.min_p = int(d.get("minProperties", 0))
        self.max_p = d.get("maxProperties")
        self.dep_req = {k: list(v) for k, v in d.get("dependentRequired", {}).items()}
        self.forbid = [list(f) for f in d.get("_forbid", [])]
        self._distinct_cut = False
        self._states: dict[tuple, Expr] = {}
        self._dependent_schemas()

    def _dependent_schemas(self) -> None:
        for name, sub in self.d.get("dependentSchemas", {}).items():
            nd = self.lw.normalize(sub)
            if nd is True:
                continue
            if nd is False:
                self.forbid.append([name])
                continue
            keys = {k for k in nd if k not in META}  # markers (`_oneOfs`, `_conds`, ...) constrain too
            if keys <= {"required"}:
                self.dep_req.setdefault(name, []).extend(nd.get("required", []))
            else:
                self.lw.unsupported(f"{self.ptr}/dependentSchemas/{name}", "dependentSchemas",
                                    f"only required-only dependent schemas are enforced, not {sorted(keys)}")

    # ------------------------------------------------------------- members
    def expr(self) -> Expr:
        # names only required (or named by dependencies) follow the declared ones
        names = list(self.props)
        extra = self.required + [k for k in self.dep_req] + [v for vs in self.dep_req.values() for v in vs]
        extra += [n for f in self.forbid for n in f]
        names += [n for n in dict.fromkeys(extra) if n not in names]
        self.names = names
        self.members = []
        for name in names:
            mark = self.lw.empty_mark()
            member = self._member(name)
            if member == ir.NOTHING:
                if name in self.required:
                    return ir.NOTHING
                self.lw.forgive_empty(mark)  # an optional member no value fits: never written
            self.members.append(member)
        tracked = {n for f in self.forbid for n in f} | set(self.dep_req) | \
            {v for vs in self.dep_req.values() for v in vs}
        self.tracked = [n for n in names if n in tracked]
        self.cap = max(self.min_p, (self.max_p + 1) if self.max_p is not None else 0)
        optional_count = sum(1 for n in names if n not in self.required)
        if self.cap > 1 and optional_count > MAX_COUNTED_OPTIONAL:
            self.lw.unsupported(*self._bound_at("minProperties" if self.min_p > 1 else "maxProperties"),
                                f"min/maxProperties over {optional_count} optional properties")
            self.cap = 0
        mark = self.lw.empty_mark()
        self.additional = additional_member(self.lw, self.d, self.node, self.names)
        self.some = SomeMembers(self.lw, self.d, self.node, self.names)  # members negations ask for
        self.lw.forgive_empty(mark)  # no undeclared member at all is fine unless minProperties says

        body = self._state(0, True, 0, frozenset())
        if self._distinct_cut:
            message = ("objects reaching minProperties only with several undeclared members are not "
                       "generated (a grammar cannot keep their names distinct)")
            if body == ir.NOTHING:
                self.lw.unsupported(*self._bound_at("minProperties"),
                                    "objects need several undeclared members to reach it, and a grammar "
                                    "cannot keep their names distinct")
                # skipped (strict=False): not enforced at all, rather than no object at all
                self.min_p, self._states = 0, {}
                self.cap = (self.max_p + 1) if self.max_p is not None else 0
                body = self._state(0, True, 0, frozenset())
            else:
                self.lw.note(f"{self.ptr}/minProperties: {message}")
        if body == ir.NOTHING:
            return ir.NOTHING
        return seq(self.ws.open("{"), body, self.ws.close("}"))

    def _bound_at(self, key: str) -> tuple[str, str]:
        """(pointer, keyword) where bound `key` was written (`not: {maxProperties: 1}` is a
        minProperties)."""
        ptr = bound_written_at(self.d, self.node, key)
        return ptr, ptr.rsplit("/", 1)[-1]

    def _schemas(self, name: str) -> list[Node]:
        """What declared member `name`'s value must satisfy."""
        schemas = [self.props[name]] if name in self.props else []
        matches = [n for p, n in self.pp.items() if name_matches(p, name)]
        if not schemas and not matches and self.addl is not None:
            schemas = [self.addl]
        return schemas + matches

    def _member(self, name: str) -> Expr:
        schemas = self._schemas(name)
        names_schema = self.d.get("propertyNames")
        if names_schema is not None and not self.lw.valid(name, names_schema):
            return ir.NOTHING
        return member_text(self.lw, encode_text(name), schemas)

    # --------------------------------------------------- presence machine
    def _state(self, i: int, first: bool, count: int, bits: frozenset) -> Expr:
        # memoized per lowering (a class-level lru_cache kept every lowering alive forever)
        key = (i, first, count, bits)
        got = self._states.get(key)
        if got is None:
            got = self._states[key] = self._memo(i, first, count, bits)
            self.lw.check_time(self.ptr)  # also on the way back: there the sequences are built
        return got

    def _memo(self, i: int, first: bool, count: int, bits: frozenset) -> Expr:
        self.lw.check_time(self.ptr)
        if i == len(self.names):
            return self._tail(first, count, bits)
        name, member = self.names[i], self.members[i]
        comma = ir.EMPTY if first else self.ws.comma
        tracked = name in self.tracked
        nbits = bits | {name} if tracked else bits
        ncount = min(count + 1, self.cap)
        # this declared member as one a negated additionalProperties / patternProperties asks for
        as_special = [seq(comma, variant, self._state(i + 1, False, ncount, nbits | marks))
                      for variant, marks in self.some.declared_variants(name, self._schemas(name), bits)
                      ] if self.some and member != ir.NOTHING else []
        if name in self.required:
            return alt(seq(comma, member, self._state(i + 1, False, ncount, nbits)), *as_special)
        if member == ir.NOTHING:
            return self._state(i + 1, first, count, bits)
        if not first and not tracked and ncount == count:  # both branches meet: factor
            # (a tree that names the next state twice doubles per member once expanded)
            return alt(seq(optional(seq(comma, member)), self._state(i + 1, False, count, bits)), *as_special)
        if as_special:
            return alt(seq(comma, member, self._state(i + 1, False, ncount, nbits)), *as_special,
                       self._state(i + 1, first, count, bits))
        emit = seq(comma, member, self._state(i + 1, False, ncount, nbits))
        return alt(emit, self._state(i + 1, first, count, bits))

    def _tail(self, first: bool, count: int, bits: frozenset) -> Expr:
        for group in self.forbid:
            if all(n in bits for n in group):
                return ir.NOTHING
        for key, needed in self.dep_req.items():
            if key in bits and not all(n in bits for n in needed):
                return ir.NOTHING
        lo = max(self.min_p - count, 0)
        hi = None if self.max_p is None else self.max_p - count
        if count >= self.cap and self.max_p is not None:
            hi = -1  # already more than maxProperties
        if hi is not None and hi < lo:
            return ir.NOTHING
        if self.some:
            if lo > 1:  # as below: several undeclared members cannot be counted
                self._distinct_cut = True
                return ir.NOTHING
            return self.some.tail(first, bits, lo, hi, self.additional)
        if self.additional == ir.NOTHING:
            return ir.EMPTY if lo == 0 else ir.NOTHING
        if lo > 1:
            # two additional members may repeat a name (the parsed object then has fewer
            # properties): counting several toward minProperties would accept invalid objects
            self._distinct_cut = True
            return ir.NOTHING
        rest = seq(self.ws.comma, self.additional)
        if not first:
            return repeat(rest, lo, hi)
        some = seq(self.additional, repeat(rest, max(lo - 1, 0), None if hi is None else hi - 1))
        if hi == 0:
            return ir.EMPTY
        return some if lo > 0 else optional(some)
