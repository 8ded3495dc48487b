"""The additional (undeclared) members of an object of a normalized JSON Schema -> IR.

Owns which names an object may add beyond its declared ones and what their
values must be: names that are not declared names (exactly: a complemented
trie, json_not_in), with `patternProperties` (split exactly into the regions
of the patterns' Venn diagram when the patterns are few and small),
`additionalProperties` and `propertyNames` deciding which names and values
are allowed. Yields one such member; how many may appear, and where, is
json_objects'. Knows nothing about declared members, arrays, scalars or refs.
"""

from __future__ import annotations

import re

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, seq

from .merge import PP_SIDES, all_of
from .not_in import encoded_not_in, not_in
from .order import META
from .pattern import PatternError, parse_pattern
from .refs import Node
from .scalars import names_language
from .text import encode_expr, quoted
from .words import minus_words, words
from .lowering import Lowering


MAX_SPLIT_PATTERNS = 3  # patternProperties split exactly into 2^n name regions
MAX_SPLIT_STATES = 64  # ... when each pattern's automaton is this small


def additional_member(lw: Lowering, d: dict, node: Node, names: list[str]) -> Expr:
    """One additional member (name not among `names`), or NOTHING."""
    return _Additional(lw, d, node, names).member()


class _Additional:
    def __init__(self, lw: Lowering, d: dict, node: Node, names: list[str]):
        self.lw, self.d, self.ptr, self.names = lw, d, node.ptr, names
        self.ws = lw.ws
        self.pp: dict[str, Node] = d.get("patternProperties", {})
        self.addl: Node | None = d.get("additionalProperties")
        # (names, patterns, within): only names that are none of `names`, match none of `patterns`
        # and match every pattern of `within` (json_some_member's member for a negated keyword)
        self.except_: tuple | None = d.get("_names_except")

    def member(self) -> Expr:
        if PP_SIDES in self.d:
            return self._split_sides()
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
                    self.lw.note(f"{self.ptr}/patternProperties: additional members satisfy every "
                                 f"pattern's schema (sound; overlapping patterns are not computed)")
            else:
                key_lang = None  # the complement of the declared names
                if pp_values:
                    self.lw.note(f"{self.ptr}/patternProperties: undeclared members satisfy the "
                                 f"pattern schemas whatever their name (sound, not exact)")
                values = values + pp_values
        elif addl_norm is False:
            return ir.NOTHING
        else:
            key_lang = None
        if self.except_ is not None:
            key_lang = self._restricted(not_in(self.names) if key_lang is None else key_lang)
        if key_lang is None and self.d.get("propertyNames") is None:
            # the plain complement of the names, encoded in the walk that builds it (json_not_in);
            # never empty (the names are finite)
            encoded = encoded_not_in(self.names)
        else:
            key_lang = self._property_names(not_in(self.names) if key_lang is None else key_lang)
            if key_lang == ir.NOTHING:
                return ir.NOTHING
            encoded = encode_expr(key_lang)
        # undeclared members without a schema: unconstrained values, one level less deep
        return member_text(self.lw, encoded, values, self.lw.additional_depth())

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
                    minus_words(parse_pattern(p), [n for n in self.names if name_matches(p, n)]), node,
                    self.lw.normalize(node)) for p, node in self.pp.items()))
            parts = []
            for mask, region in _regions(dfas):
                node = all_of([nodes[i] for i in range(len(nodes)) if mask >> i & 1])
                if node is None:
                    node, norm = self.addl, addl_norm
                else:
                    norm = self.lw.normalize(node)
                if norm is False:
                    continue
                parts.append(self._additional_member(minus_words(dfa_ops.to_expr(region), self.names), node, norm))
        except (dfa_ops.DfaOpError, PatternError):
            return None
        return alt(*parts) if parts else ir.NOTHING

    def _split_sides(self) -> Expr:
        """Additional members of an allOf whose members each have patternProperties and
        additionalProperties (json_merge.pp_sides): the names split into the regions of all
        the members' patterns; in a region a name takes, from each member, its matching
        patterns' schemas or else that member's additionalProperties."""
        sides = self.d[PP_SIDES]
        patterns = list(dict.fromkeys(p for pp, _ in sides for p in pp))
        where = f"{self.ptr}/patternProperties"
        if len(patterns) > MAX_SPLIT_PATTERNS or self.d.get("propertyNames") is not None:
            self.lw.unsupported(where, "patternProperties",
                                "patternProperties in several allOf members next to additionalProperties "
                                f"(more than {MAX_SPLIT_PATTERNS} patterns, or with propertyNames)")
            return ir.NOTHING
        try:
            dfas = [dfa_ops.expr_dfa(parse_pattern(p, exact=True)) for p in patterns]
            if any(x is not None and x.num_states > MAX_SPLIT_STATES for x in dfas):
                raise dfa_ops.DfaOpError(f"a pattern of over {MAX_SPLIT_STATES} states")
            parts = []
            for mask, region in _regions(dfas):
                inside = {patterns[i] for i in range(len(patterns)) if mask >> i & 1}
                schemas = []
                for pp, addl in sides:
                    mine = [node for p, node in pp.items() if p in inside]
                    schemas += mine if mine else ([addl] if addl is not None else [])
                node = all_of(schemas)
                norm = True if node is None else self.lw.normalize(node)
                parts.append(self._additional_member(minus_words(dfa_ops.to_expr(region), self.names), node, norm))
        except (dfa_ops.DfaOpError, PatternError) as exc:
            self.lw.unsupported(where, "patternProperties", f"patternProperties in several allOf members: {exc}")
            return ir.NOTHING
        return alt(*parts) if parts else ir.NOTHING

    def _additional_member(self, key: Expr, node, norm) -> Expr:
        if self.except_ is not None:
            key = self._restricted(key)
        if key == ir.NOTHING or norm is False:
            return ir.NOTHING
        value = self.lw.any_value(self.lw.additional_depth()) if norm is True else self.lw.lower(node)
        return seq(quoted(encode_expr(key)), self.ws.colon, value) if value != ir.NOTHING else ir.NOTHING

    def _restricted(self, key: Expr) -> Expr:
        """key minus the excepted names and every name an excepted pattern matches, within the
        names every `within` pattern matches (exact `re.search` languages both ways)."""
        names, patterns, within = self.except_
        try:
            lang = dfa_ops.expr_dfa(minus_words(key, list(names)) if names else key)
            for p in patterns:
                lang = dfa_ops.minus(lang, dfa_ops.expr_dfa(parse_pattern(p, exact=True)))
            for p in within:  # exact too: a name Python's `re.search` would not match is no member of it
                lang = dfa_ops.intersect(lang, dfa_ops.expr_dfa(parse_pattern(p, exact=True)))
            return dfa_ops.to_expr(lang)
        except (dfa_ops.DfaOpError, PatternError) as exc:
            self.lw.unsupported(f"{self.ptr}/not", "not", f"the member names a negation asks for: {exc}")
            return ir.NOTHING

    def _pattern_minus_declared(self, pattern: str) -> Expr:
        try:
            lang = parse_pattern(pattern)
        except PatternError as exc:
            self.lw.unsupported(f"{self.ptr}/patternProperties", "patternProperties", f"{pattern!r}: {exc}")
            return ir.NOTHING
        return minus_words(lang, [n for n in self.names if name_matches(pattern, n)])

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
        try:
            names = names_language(self.lw, n, f"{self.ptr}/propertyNames")
            if names is not None:  # any string keywords: the names both languages allow
                return dfa_ops.to_ir(dfa_ops.intersect(dfa_ops.expr_dfa(key_lang), dfa_ops.expr_dfa(names)))
        except dfa_ops.DfaOpError as exc:
            self.lw.unsupported(f"{self.ptr}/propertyNames", "propertyNames", str(exc))
            return key_lang
        self.lw.unsupported(f"{self.ptr}/propertyNames", "propertyNames",
                            f"propertyNames with {sorted(keys)} is not enforced here")
        return key_lang


def _regions(dfas: list) -> list[tuple]:
    """(mask, DFA) of each non-empty region of the languages' Venn diagram: bit i of the mask is
    set where the region lies inside language i, clear where it lies outside."""
    out = []
    for mask in range(1 << len(dfas)):
        region = dfa_ops.any_text()
        for i, lang in enumerate(dfas):
            region = dfa_ops.intersect(region, lang) if mask >> i & 1 else dfa_ops.minus(region, lang)
            if region is None:
                break
        if region is not None:
            out.append((mask, region))
    return out


def member_text(lw: Lowering, key: Expr, schemas: list[Node], depth: int | None = None) -> Expr:
    """`"key": value` (key already JSON-encoded) with a value valid against all of `schemas`
    (none: any value, nesting `depth` deep), or NOTHING when no value is."""
    value = lw.lower(all_of(schemas)) if schemas else lw.any_value(depth)
    if value == ir.NOTHING:
        return ir.NOTHING
    return seq(quoted(key), lw.ws.colon, value)


def name_matches(pattern: str, name: str) -> bool:
    """re.search, where a pattern Python cannot compile matches no declared name."""
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False
