"""Objects of a normalized JSON Schema -> IR.

Owns the member grammar: declared properties in declaration order (required
ones present, optional ones omittable), then additional members whose names
are not declared names (exactly: a complemented trie of the declared names),
with `patternProperties`, `additionalProperties` and `propertyNames` deciding
which additional names and values are allowed. Presence constraints
(`minProperties`/`maxProperties`, `dependentRequired`, required-only
`dependentSchemas`, and `not: {required}` from composition as `_forbid`) are
enforced by a small state machine over the declared properties, unrolled into
the IR. Knows nothing about arrays, scalars or refs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from deepinfer.constraints import dfa_ops, ir
from deepinfer.constraints.ir import CharClass, Expr, alt, optional, repeat, seq

from .json_merge import synthetic
from .json_numbers import words
from .json_pattern import PatternError, parse_pattern
from .json_words import minus_words
from .json_refs import Node
from .json_not_in import encoded_not_in, not_in
from .json_order import META
from .json_text import encode_expr, encode_text, quoted

if TYPE_CHECKING:  # pragma: no cover
    from .json_schema import Lowerer

MAX_SPLIT_PATTERNS = 3  # patternProperties split exactly into 2^n name regions
MAX_SPLIT_STATES = 64  # ... when each pattern's automaton is this small
MAX_COUNTED_OPTIONAL = 10  # min/maxProperties > 1 unroll 2^k paths over this many optional members


def lower_object(lw: "Lowerer", d: dict, node: Node) -> Expr:
    return _ObjectLowering(lw, d, node).expr()


class _ObjectLowering:
    def __init__(self, lw: "Lowerer", d: dict, node: Node):
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
            member = self._member(name)
            if member == ir.NOTHING and name in self.required:
                return ir.NOTHING
            self.members.append(member)
        tracked = {n for f in self.forbid for n in f} | set(self.dep_req) | \
            {v for vs in self.dep_req.values() for v in vs}
        self.tracked = [n for n in names if n in tracked]
        self.cap = max(self.min_p, (self.max_p + 1) if self.max_p is not None else 0)
        optional_count = sum(1 for n in names if n not in self.required)
        if self.cap > 1 and optional_count > MAX_COUNTED_OPTIONAL:
            self.lw.unsupported(f"{self.ptr}/minProperties", "minProperties",
                                f"min/maxProperties over {optional_count} optional properties")
            self.cap = 0
        self.additional = self._additional()
        body = self._state(0, True, 0, frozenset())
        if self._distinct_cut:
            message = ("objects reaching minProperties only with several undeclared members are not "
                       "generated (a grammar cannot keep their names distinct)")
            if body == ir.NOTHING:
                self.lw.unsupported(f"{self.ptr}/minProperties", "minProperties", message)
            else:
                self.lw.note(f"{self.ptr or '/'}/minProperties: {message}")
        if body == ir.NOTHING:
            return ir.NOTHING
        return seq(self.ws.open("{"), body, self.ws.close("}"))

    def _member(self, name: str) -> Expr:
        schemas = [self.props[name]] if name in self.props else []
        matches = [n for p, n in self.pp.items() if _search(p, name)]
        if not schemas and not matches and self.addl is not None:
            schemas = [self.addl]
        schemas += matches
        names_schema = self.d.get("propertyNames")
        if names_schema is not None and not self.lw.valid(name, names_schema):
            return ir.NOTHING
        if not schemas:
            value = self.lw.any_value()
        elif len(schemas) == 1:
            value = self.lw.lower(schemas[0])
        else:
            value = self.lw.lower(synthetic({"allOf": schemas}, schemas[0]))
        if value == ir.NOTHING:
            return ir.NOTHING
        return seq(quoted(encode_text(name)), self.ws.colon, value)

    def _additional(self) -> Expr:
        """One additional member (name not declared), or NOTHING."""
        addl_norm = self.lw.normalize(self.addl) if self.addl is not None else True
        if self.pp and self.d.get("propertyNames") is None:
            split = self._split_patterns(addl_norm)
            if split is not None:
                return split
        values: list[Node] = [self.addl] if self.addl is not None and addl_norm is not True else []
        if self.pp:
            pp_values = [n for n in self.pp.values() if self.lw.normalize(n) is not True]
            if addl_norm is False:
                key_lang = alt(*(self._pattern_minus_declared(p) for p in self.pp))
                values = pp_values if len(pp_values) <= 1 else pp_values
                if len(pp_values) > 1:
                    self.lw.note(f"{self.ptr or '/'}/patternProperties: additional members satisfy every "
                                 f"pattern's schema (sound; overlapping patterns are not computed)")
            else:
                key_lang = None  # the complement of the declared names
                if pp_values:
                    self.lw.note(f"{self.ptr or '/'}/patternProperties: undeclared members satisfy the "
                                 f"pattern schemas whatever their name (sound, not exact)")
                values = values + pp_values
        elif addl_norm is False:
            return ir.NOTHING
        else:
            key_lang = None
        if key_lang is None and self.d.get("propertyNames") is None:
            # the plain complement of the names, encoded in the walk that builds it (json_not_in);
            # never empty (the names are finite)
            encoded = encoded_not_in(self.names)
        else:
            key_lang = self._property_names(not_in(self.names) if key_lang is None else key_lang)
            if key_lang == ir.NOTHING:
                return ir.NOTHING
            encoded = encode_expr(key_lang)
        if not values:  # undeclared members: unconstrained values, one level less deep
            value = self.lw.any_value(self.lw.additional_depth())
        elif len(values) == 1:
            value = self.lw.lower(values[0])
        else:
            value = self.lw.lower(synthetic({"allOf": values}, values[0]))
        if value == ir.NOTHING:
            return ir.NOTHING
        return seq(quoted(encoded), self.ws.colon, value)

    def _split_patterns(self, addl_norm) -> Expr | None:
        """Exact additional members: the names are split into the regions of the patterns'
        Venn diagram; a name matching exactly the patterns S takes allOf(S) (none: the
        additionalProperties schema). None when that cannot be computed."""
        if len(self.pp) > MAX_SPLIT_PATTERNS or (len(self.pp) == 1 and addl_norm is False):
            return None  # one pattern and nothing else: the plain lowering is exact already
        try:
            dfas = [dfa_ops.expr_dfa(parse_pattern(p, exact=True)) for p in self.pp]
            if any(x is not None and x.num_states > MAX_SPLIT_STATES for x in dfas):
                return None  # counting patterns ({1,255}): regions would be large expressions
            nodes = list(self.pp.values())
            if addl_norm is False and all(dfa_ops.intersect(dfas[i], dfas[j]) is None
                                          for i in range(len(dfas)) for j in range(i + 1, len(dfas))):
                # disjoint patterns: each name region is one pattern's own language
                return alt(*(self._additional_member(
                    minus_words(parse_pattern(p), [n for n in self.names if _search(p, n)]), node,
                    self.lw.normalize(node)) for p, node in self.pp.items()))
            parts = []
            for mask in range(1 << len(dfas)):
                region = _ANY_TEXT()
                for i, lang in enumerate(dfas):
                    inside = mask >> i & 1
                    region = dfa_ops.intersect(region, lang if inside else dfa_ops.complement(lang, _ANY_TEXT()))
                    if region is None:
                        break
                if region is None:
                    continue
                members = [nodes[i] for i in range(len(nodes)) if mask >> i & 1]
                if not members:
                    node, norm = self.addl, addl_norm
                elif len(members) == 1:
                    node, norm = members[0], self.lw.normalize(members[0])
                else:
                    node = synthetic({"allOf": members}, members[0])
                    norm = self.lw.normalize(node)
                if norm is False:
                    continue
                key = minus_words(dfa_ops.to_expr(region), self.names)
                parts.append(self._additional_member(key, node, norm))
        except (dfa_ops.DfaOpError, PatternError):
            return None
        return alt(*parts) if parts else ir.NOTHING

    def _additional_member(self, key: Expr, node, norm) -> Expr:
        if key == ir.NOTHING or norm is False:
            return ir.NOTHING
        value = self.lw.any_value(self.lw.additional_depth()) if norm is True else self.lw.lower(node)
        return seq(quoted(encode_expr(key)), self.ws.colon, value) if value != ir.NOTHING else ir.NOTHING

    def _pattern_minus_declared(self, pattern: str) -> Expr:
        try:
            lang = parse_pattern(pattern)
        except PatternError as exc:
            self.lw.unsupported(f"{self.ptr}/patternProperties", "patternProperties", f"{pattern!r}: {exc}")
            return ir.NOTHING
        return minus_words(lang, [n for n in self.names if _search(pattern, n)])

    def _property_names(self, key_lang: Expr) -> Expr:
        """Additional names must also be valid `propertyNames` (pattern or enum forms)."""
        pn = self.d.get("propertyNames")
        if pn is None:
            return key_lang
        n = self.lw.normalize(pn)
        if n is True:
            return key_lang
        if n is False:
            return ir.NOTHING
        keys = {k for k in n if k not in META}  # markers (`_oneOfs`, `_conds`, `_patterns`...) constrain too
        if keys <= {"type", "enum"} and "enum" in n:
            names = [v for v in n["enum"] if isinstance(v, str) and v not in self.names]
            if key_lang != not_in(self.names):
                self.lw.unsupported(f"{self.ptr}/propertyNames", "propertyNames",
                                    "propertyNames enum together with patternProperties")
            return words(names) if names else ir.NOTHING
        if keys <= {"type", "pattern"} and "pattern" in n and key_lang == not_in(self.names):
            try:
                return minus_words(parse_pattern(n["pattern"]), self.names)
            except PatternError as exc:
                self.lw.unsupported(f"{self.ptr}/propertyNames", "propertyNames", str(exc))
                return key_lang
        self.lw.unsupported(f"{self.ptr}/propertyNames", "propertyNames",
                            f"propertyNames with {sorted(keys)} is not enforced here")
        return key_lang

    # --------------------------------------------------- presence machine
    def _state(self, i: int, first: bool, count: int, bits: frozenset) -> Expr:
        # memoized per lowering (a class-level lru_cache kept every lowering alive forever)
        key = (i, first, count, bits)
        got = self._states.get(key)
        if got is None:
            got = self._states[key] = self._memo(i, first, count, bits)
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
        if name in self.required:
            return seq(comma, member, self._state(i + 1, False, ncount, nbits))
        if member == ir.NOTHING:
            return self._state(i + 1, first, count, bits)
        if not first and not tracked and ncount == count:  # both branches meet: factor
            return seq(optional(seq(comma, member)), self._state(i + 1, False, count, bits))
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


@lru_cache(maxsize=None)
def _ANY_TEXT():
    return dfa_ops.expr_dfa(repeat(CharClass.any_char()))


def _search(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False
