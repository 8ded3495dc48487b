"""The walk over a JSON Schema: one Lowerer per `lower_json_schema` call (schema.py).

Owns the rules the walk makes (`$ref` targets and synthetic merges as one
rule each, so recursive references become RuleRef cycles; `split` mode's
non-regular rules; the rules for unconstrained values), failing closed
(`unsupported`, `check_time`), and the dispatch of a normalized schema to
`enum`, composition or the lowering of each `type`, through the `Keywords`
table it is given (keywords.py builds it; lowering.py defines it and the
`Lowering` protocol the keyword modules see, so none of them imports this
module). What a concrete value's verdict is belongs to verdict.py, how a
schema is normalized and merged to normalize.py and merge.py. Knows nothing
about tokens or automata.
"""

from __future__ import annotations

import json
import re

from deepinfer.constraints import deadline as compile_deadline
from deepinfer.constraints import ir
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import Expr, alt, literal

from .lowering import Keywords
from .merge import TYPES, MergeError, canon, merge, type_set
from .drafts import draft_of
from .jsonschema_import import lowering_clock
from .normalize import VALIDATION, Normalizer
from .digits import bounded_number_text
from .numbers import NUMBER_TEXT
from .refs import Node, RefError, Refs
from .text import Whitespace, any_string, value_text
from .unevaluated import UNEVAL, close
from .verdict import Verdict, markers_allow

LOWER_TIME_BUDGET_S = 8.0  # both lowerings (DFA attempt, then split for the context-free back end)
DEAD_RULE = "unproductive"  # a rule with no finite derivation: referencing it changes no language
_STRING_SIZE = ("minLength", "maxLength", "pattern", "format")
_NUMBER_SIZE = ("multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
# keywords that can make a scalar's automaton large, by type (ir.Grammar.sources)
_SIZE_KEYWORDS = {"string": _STRING_SIZE, "number": _NUMBER_SIZE, "integer": _NUMBER_SIZE}
_UNSUPPORTED = {"$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}
_UNSUPPORTED_WHY = {"unevaluatedItems": "enforced only where what is evaluated does not depend on a branch "
                    "(prefixItems, items, additionalItems, contains, allOf, $ref), not next to anyOf, oneOf or if"}


class Lowerer:
    def __init__(self, root, ws: Whitespace, strict, any_depth: int | None, keywords: Keywords):
        self.ws = ws
        self.keywords = keywords
        self.strict = _strictness(strict)
        self.any_depth = any_depth
        self.draft = draft_of(root)
        self.refs = Refs(root, self.draft.ref_alone)
        self.norm = Normalizer(self.refs, self.draft)
        self.rules: dict[str, Expr] = {"start": ir.EMPTY}
        self.annotations: list[str] = []
        self._ref_rules: dict[tuple[int, str], str] = {}
        self._ref_pointers: dict = {}  # _ref_rules key -> the pointer of the schema its rule lowers
        self._empty_rules: dict[str, str] = {}  # rule -> the pointer its emptiness comes from
        # pointers of the sub-schemas found empty (no valid value) inside each `lower` call
        # in progress, innermost last: the error for an unsatisfiable schema names the first
        self._empty_causes: list[list[str]] = [[]]
        self.verdict = Verdict(self.refs, self.fail)
        self.composition = keywords.composition(self)
        self._counter = 0
        self.split = False
        self.spans = 0  # maxItems - minItems summed over the arrays lowered (json_arrays)
        self.unique_matcher = False
        self.capped: frozenset = frozenset()  # json_caps: long maxLength nodes the matcher counts
        self.unknown_formats = "annotate"  # or "refuse" (lower_json_schema's option)
        self.number_digits: int | None = None  # json_digits: the digit limit on numbers, None: off
        self.sources: list[tuple[str, str, Expr]] = []  # ir.Grammar.sources: scalars with size keywords
        self.deadline = lowering_clock() + LOWER_TIME_BUDGET_S

    # ----------------------------------------------------------------- entry
    def grammar(self) -> ir.Grammar:
        body = self.lower(self.refs.root)
        if body == ir.NOTHING:
            cause = self._empty_causes[0][0] if self._empty_causes[0] else "/"
            if cause == "/":
                raise self.fail(cause, "unsatisfiable: no JSON value is valid against the schema")
            raise self.fail(cause, "unsatisfiable: no JSON value is valid here, and the schema "
                                   "has no valid instance without one")
        self.rules["start"] = body
        if self._ref_rules:
            self._check_productive()
        grammar = ir.Grammar(self.rules, "start", list(dict.fromkeys(self.annotations)))
        grammar.sources = self.sources
        return grammar

    def _check_productive(self) -> None:
        """A `$ref` cycle with no base case (`{"$ref": "#"}`, a required member that is the whole
        schema again) leaves the start rule deriving no finite text: say so here, naming the
        schema the cycle runs through, not later as an empty grammar with no location."""
        dead = set(self.rules) - ir.productive_rules(self.rules)
        if "start" not in dead:
            return
        by_name = {name: key for key, name in self._ref_rules.items()}
        for name in self.rules:
            if name in dead and name in by_name:
                target = by_name[name]
                ptr = self._ref_pointers.get(target, "/")
                raise self.fail(ptr, "unsatisfiable: every instance would have to contain itself "
                                     "(a $ref cycle with no way out)")
        raise self.fail("/", "unsatisfiable: no finite JSON value is valid against the schema")

    def check_time(self, ptr: str) -> None:
        """Fail closed long before a caller's timeout (called wherever lowering loops); the
        compile's own limit (deadline.py) is told the pointer reached."""
        compile_deadline.check(ptr)
        if lowering_clock() > self.deadline:
            raise ConstraintError(f"JSON Schema too complex: lowering took over {LOWER_TIME_BUDGET_S:g} s "
                                  f"(at {ptr or '/'})")

    def fail(self, ptr: str, message: str) -> ConstraintError:
        return ConstraintError(f"JSON Schema {ptr or '/'}: {message}")

    def unsupported(self, ptr: str, keyword: str, message: str) -> None:
        """A keyword that is not enforced: error, or (strict=False / named) a recorded skip."""
        allowed = self.strict is False or (not isinstance(self.strict, bool) and keyword in self.strict)
        if not allowed:
            raise self.fail(ptr, f"`{keyword}` is not enforced: {message}")
        self.annotations.append(f"skipped {ptr}: {message}")

    def empty_mark(self) -> int:
        """A mark for `forgive_empty`: how many empty sub-schemas the current call has met."""
        return len(self._empty_causes[-1])

    def forgive_empty(self, mark: int) -> None:
        """Sub-schemas found empty since `mark` cost nothing (an optional member that is
        simply never written): an unsatisfiable-schema error must not name them."""
        del self._empty_causes[-1][mark:]

    def blame_empty(self, ptr: str) -> None:
        """Name `ptr` as why the current sub-schema has no valid value."""
        self._empty_causes[-1].append(ptr)

    def note(self, text: str) -> None:
        self.annotations.append(text)

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}_{self._counter}"

    # ------------------------------------------------------------- lowering
    def lower(self, node: Node, memo: bool = True) -> Expr:
        """The JSON text language of the values valid against `node`."""
        self.check_time(node.ptr)
        self._empty_causes.append([])
        try:
            expr = self._lower(node, memo)
        finally:
            inner = self._empty_causes.pop()
        if expr == ir.NOTHING:  # blame the first empty sub-schema it needed, else itself
            self._empty_causes[-1].append(inner[0] if inner else node.ptr or "/")
        if not self.split or expr == ir.NOTHING or isinstance(expr, (ir.Literal, ir.RuleRef, ir.CharClass)):
            return expr
        # split mode: its own rule, made non-regular by an alternative that derives nothing
        if DEAD_RULE not in self.rules:
            self.rules[DEAD_RULE] = ir.seq(literal("\x00"), ir.RuleRef(DEAD_RULE))
        name = self.fresh("value")
        self.rules[name] = alt(expr, ir.RuleRef(DEAD_RULE))
        return ir.RuleRef(name)

    def _lower(self, node: Node, memo: bool) -> Expr:
        s = node.schema
        if s is True or s == {} or (isinstance(s, dict) and not set(s) & VALIDATION):
            return self.any_value()
        if s is False:
            return ir.NOTHING
        if isinstance(s, dict) and "$ref" in s and not (set(s) & (VALIDATION - {"$ref"})):
            return self.ref_rule(node, s["$ref"])
        if memo and isinstance(s, dict) and ("$ref" in s or _is_synthetic(s)):
            # one rule per such node, so recursion through $ref-with-siblings or merges terminates
            return self._rule_for(_node_key(node), node, lambda: self.lower(node, memo=False))
        return self.lower_normal(self.normalize(node), node)

    def normalize(self, node: Node) -> dict | bool:
        try:
            return self.norm.normalize(node)
        except MergeError as exc:
            raise self.fail(exc.ptr, str(exc)) from None
        except RefError as exc:
            raise self.fail(node.ptr, str(exc)) from None

    def merged(self, a: dict | bool, b: dict | bool, where: Node) -> dict | bool:
        try:
            return merge(a, b, where)
        except MergeError as exc:
            raise self.fail(exc.ptr, str(exc)) from None

    def ref_rule(self, node: Node, ref) -> Expr:
        try:
            target = self.refs.resolve(ref, node.base)
        except RefError as exc:
            raise self.fail(node.ptr + "/$ref", str(exc)) from None
        return self._rule_for(_node_key(target), target, lambda: self.lower(target, memo=False))

    def _rule_for(self, key, node: Node, build) -> Expr:
        name = self._ref_rules.get(key)
        if name is None:
            name = self._ref_rules[key] = self._rule_name(node)
            self._ref_pointers[key] = node.ptr or "/"
            self.rules[name] = ir.NOTHING  # placeholder while the body is lowered (recursion)
            body = build()
            self.rules[name] = body
            if body == ir.NOTHING:
                self._empty_rules[name] = self._empty_causes[-1][-1] if self._empty_causes[-1] else node.ptr
                return ir.NOTHING
        if name in self._empty_rules:
            self._empty_causes[-1].append(self._empty_rules[name])
            return ir.NOTHING
        return ir.RuleRef(name)

    def _rule_name(self, target: Node) -> str:
        tail = re.sub(r"[^A-Za-z0-9_]+", "_", target.ptr.rsplit("/", 1)[-1]).strip("_") or "root"
        name = f"def_{tail}"
        while name in self.rules:
            name = self.fresh(f"def_{tail}")
        return name

    def lower_normal(self, d: dict | bool, node: Node) -> Expr:
        """Lower a normalized schema (see json_merge)."""
        if d is True:
            return self.any_value()
        if d is False:
            return ir.NOTHING
        for key in _UNSUPPORTED & set(d):
            self.unsupported(f"{node.ptr}/{key}", key, _UNSUPPORTED_WHY.get(key, "not supported by this compiler"))
        if "enum" in d:  # (values are checked against the sources by jsonschema: markers too)
            return self.lower_enum(d, node)
        if any(k in d for k in ("anyOf", "_oneOfs", "not", "_conds")):
            return self.composition.lower(d, node)
        if UNEVAL in d:  # every branch taken: close what this alternative left unevaluated
            d, closer = close(d)
            if closer is not None:
                d = self.merged(d, self.normalize(closer), closer)
            return self.lower_normal(d, node)
        return self.lower_types(d, node)

    def lower_enum(self, d: dict, node: Node) -> Expr:
        self.check_time(node.ptr)
        values = [v for v in d["enum"] if all(self.valid(v, src, listed=True) for src in d["_sources"])
                  and markers_allow(d, v)]
        unique = {canon(v): v for v in values}
        if not unique:
            return ir.NOTHING
        expr = alt(*(value_text(v, self.ws, not self.draft.boolean_exclusive) for v in unique.values()))
        keyword = "const" if isinstance(node.schema, dict) and "const" in node.schema else "enum"
        self.sources.append((node.ptr or "/", f"`{keyword}`", expr))  # a size error names it
        return expr

    def lower_types(self, d: dict, node: Node) -> Expr:
        types = type_set(d)
        parts = []
        self._check_structured_exclusions(d, node, d.get("_not_enum", []))
        for t in TYPES:
            if t not in types or (t == "integer" and "number" in types):
                continue
            expr = self.keywords.by_type[t](self, d, node)
            parts.append(self._sized(d, node, expr, _SIZE_KEYWORDS.get(t, ())))
        return alt(*parts) if parts else ir.NOTHING

    def _sized(self, d: dict, node: Node, expr: Expr, keywords: tuple[str, ...]) -> Expr:
        """Remember a scalar whose keywords can make its automaton large (ir.Grammar.sources)."""
        present = [k for k in keywords if k in d]
        if present and expr != ir.NOTHING:
            self.sources.append((node.ptr or "/", ", ".join(f"`{k}`" for k in present), expr))
        return expr

    def _check_structured_exclusions(self, d: dict, node: Node, excluded: list) -> None:
        """Objects and arrays that `not: {const/enum}` (or a oneOf / if negation) excludes: strings,
        numbers, booleans and null are left out exactly; one object or array value cannot be, so
        the schema is refused (fail closed) whenever its type is allowed here. (Deciding whether
        the rest of the schema admits the value would need the whole schema's verdict, and its
        `if`/`oneOf` parts are exactly what excluded it.)"""
        for v in excluded:
            if isinstance(v, (dict, list)) and ("object" if isinstance(v, dict) else "array") in type_set(d):
                where = next((src.ptr for src in d.get("_sources", []) if isinstance(src.schema, dict)
                              and "not" in src.schema), node.ptr)
                self.unsupported(f"{where}/not", "not",
                                 f"excluding the {'object' if isinstance(v, dict) else 'array'} value "
                                 f"{json.dumps(v)[:60]} is not enforced")

    # ----------------------------------------------------------- utilities
    def any_value(self, depth: int | None = None) -> Expr:
        """Any JSON value (bounded nesting unless any_depth is None)."""
        depth = self.any_depth if depth is None else depth
        name = "any_json" if depth is None else f"any_json_{depth}"
        if name not in self.rules:
            self.rules[name] = ir.NOTHING
            inner = ir.RuleRef(name) if depth is None else (self.any_value(depth - 1) if depth > 0 else None)
            number = NUMBER_TEXT if self.number_digits is None else bounded_number_text(self.number_digits)
            scalars = [literal("null"), literal("true"), literal("false"), number, any_string()]
            if inner is not None:
                ws = self.ws
                member = ir.seq(any_string(), ws.colon, inner)
                scalars.append(ir.seq(ws.open("["), ir.optional(ir.seq(inner, ir.repeat(ir.seq(ws.comma, inner)))),
                                      ws.close("]")))
                scalars.append(ir.seq(ws.open("{"), ir.optional(ir.seq(member, ir.repeat(ir.seq(ws.comma, member)))),
                                      ws.close("}")))
            self.rules[name] = alt(*scalars)
        return ir.RuleRef(name)

    def additional_depth(self) -> int | None:
        return None if self.any_depth is None else max(self.any_depth - 1, 0)

    def valid(self, value, node: Node, listed: bool = False) -> bool:
        """`jsonschema`'s verdict for `value` against a (possibly synthetic) Node (verdict.py)."""
        return self.verdict.valid(value, node, listed)


def _is_synthetic(s: dict) -> bool:
    members = s.get("allOf")  # a malformed (non-array) allOf is json_values' error, raised later
    return (isinstance(members, list) and any(isinstance(v, Node) for v in members)) or \
        isinstance(s.get("not"), Node)


def _node_key(node: Node):
    s = node.schema
    if isinstance(s, dict) and _is_synthetic(s):
        members = s.get("allOf") or [s["not"]]
        return ("allOf" if "allOf" in s else "not",) + tuple(_node_key(m) for m in members)
    return ("raw", id(s), node.base)


def _strictness(strict):
    """True, False, or a frozenset of keyword names (checked: a string is not a list of names)."""
    if isinstance(strict, bool):
        return strict
    if isinstance(strict, (list, tuple, set, frozenset)) and all(isinstance(k, str) for k in strict):
        return frozenset(strict)
    raise ConstraintError(f"strict must be True, False or a list of keyword names, not {strict!r}")
