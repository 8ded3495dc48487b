"""JSON Schema -> grammar IR (the entry point `lower_json_schema`).

Owns the walk over a schema: loading (dict, JSON text, Pydantic model class),
`$ref` rules (recursive references become RuleRef cycles; each target is one
rule), composition (`enum`/`const`, `anyOf`, `oneOf` when its branches are
provably disjoint, `not` and `if`/`then`/`else` in the forms that can be
enforced) and dispatch by `type` to the object, array and scalar lowerings.
Fail closed: a validation keyword that is not enforced raises ConstraintError
naming the keyword and its JSON pointer, unless `strict=False` (or a list of
keyword names) allows skipping it, which is then recorded in
`Grammar.annotations`. Knows nothing about tokens or automata.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from deepinfer.constraints import ir
from deepinfer.constraints.dfa import budget_clock
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import Expr, alt, literal

from . import json_arrays, json_objects, json_scalars
from .json_quick_valid import quick_valid
from .json_composition import Composition
from .json_merge import TYPES, MergeError, Normalizer, canon, merge, synthetic, type_set
from .json_refs import Node, RefError, Refs
from .json_text import Whitespace, any_string, value_text
from .json_numbers import NUMBER_TEXT

LOWER_TIME_BUDGET_S = 8.0  # both lowerings (DFA attempt, then split for the context-free back end)
_DEAD = "unproductive"  # a rule with no finite derivation: referencing it changes no language
DEFAULT_ANY_DEPTH = None  # unconstrained values nest freely (recursive rule, context-free back end)
_TYPE_KEYWORDS = {
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "object": {"properties", "patternProperties", "additionalProperties", "propertyNames",
               "minProperties", "maxProperties", "required", "dependentRequired", "dependentSchemas"},
    "array": {"items", "prefixItems", "contains", "minContains", "maxContains", "minItems", "maxItems",
              "uniqueItems"},
}
_UNSUPPORTED = {"$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}


def lower_json_schema(schema, *, whitespace: str = "default", strict: bool | list[str] = True,
                      any_depth: int | None = DEFAULT_ANY_DEPTH, split: bool = False,
                      unique_matcher: bool = False, deadline: float | None = None) -> ir.Grammar:
    """Lower a JSON Schema (dict, JSON text or Pydantic model class) to an IR grammar.

    whitespace: "default" (json.dumps/pretty-printer whitespace, bounded runs), "compact"
    (none) or "unbounded". strict: True fails on any keyword that is not enforced; False
    (or a list of keyword names) skips those (all, or the named ones) and records them in
    `Grammar.annotations`. any_depth: how deep unconstrained values (`{}`, `true`) may
    nest; None makes them recursive (context-free back end). split: put every sub-schema
    in its own non-regular rule (same language), for the context-free back end.
    unique_matcher: `uniqueItems` over unbounded item sets is left to the matcher
    (the caller wraps the automaton, see `compile_json_schema`); the grammar then says so
    in its annotations. deadline: `dfa.budget_clock()` (thread CPU time) value past which lowering fails
    (default: LOWER_TIME_BUDGET_S from now).
    """
    lowerer = Lowerer(load_schema(schema), Whitespace(whitespace), strict, any_depth)
    if deadline is not None:
        lowerer.deadline = deadline
    lowerer.split = split
    lowerer.unique_matcher = unique_matcher
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # deep schemas recurse once per level
    try:
        return lowerer.grammar()
    except RecursionError:
        raise ConstraintError("JSON Schema nests too deeply to compile") from None
    finally:
        sys.setrecursionlimit(limit)


def unsplit(grammar: ir.Grammar) -> ir.Grammar:
    """A `split=True` grammar without its dead alternatives: the same language, and as
    regular as the plain lowering (sub-schemas stay separate rules, which build_nfa
    inlines). Why: a recursive schema used to be lowered twice (plain, then split)."""
    dead = ir.RuleRef(_DEAD)
    rules = {}
    for name, body in grammar.rules.items():
        if name == _DEAD:
            continue
        if isinstance(body, ir.Alt) and dead in body.items:
            body = alt(*(item for item in body.items if item != dead)) if len(body.items) > 1 else ir.NOTHING
        rules[name] = body
    return ir.Grammar(rules, grammar.start, list(grammar.annotations))


def load_schema(schema) -> Any:
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if isinstance(schema, (str, bytes)):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as exc:
            raise ConstraintError(f"JSON Schema is not valid JSON: {exc}") from None
    if isinstance(schema, (dict, bool)):
        return schema
    raise ConstraintError(f"JSON Schema must be a dict, JSON text or Pydantic model class, "
                          f"not {type(schema).__name__}")


_NEWER_KEYWORDS = frozenset({"prefixItems", "dependentSchemas", "dependentRequired", "minContains", "maxContains"})


class Lowerer:
    def __init__(self, root, ws: Whitespace, strict, any_depth: int | None):
        self.ws = ws
        self.strict = strict
        self.any_depth = any_depth
        self.refs = Refs(root)
        # Drafts before 2019-09 have no prefixItems, dependentSchemas, dependentRequired,
        # minContains or maxContains: jsonschema ignores them there, and so must the grammar (honoured
        # inside an `if` or `oneOf`, or as `minContains: 0`, they let through what the schema rejects).
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.legacy_draft = isinstance(schema_uri, str) and any(
            f"draft-0{n}" in schema_uri for n in (3, 4, 6, 7))
        # And the reverse: a document that declares 2019-09 has no `dependencies`, 2020-12 neither
        # `additionalItems`. A document without `$schema` keeps the draft-07 reading of both.
        ignored = _NEWER_KEYWORDS if self.legacy_draft else frozenset()
        if isinstance(schema_uri, str) and "2019-09" in schema_uri:
            ignored = frozenset({"dependencies"})
        elif isinstance(schema_uri, str) and "2020-12" in schema_uri:
            ignored = frozenset({"dependencies", "additionalItems"})
        self.norm = Normalizer(self.refs, ignored)
        self.rules: dict[str, Expr] = {"start": ir.EMPTY}
        self.annotations: list[str] = []
        self._ref_rules: dict[tuple[int, str], str] = {}
        self._empty_rules: set[str] = set()
        self._validators: dict[str, Any] = {}
        self.composition = Composition(self)
        self._counter = 0
        self.split = False
        self.unique_matcher = False
        self.deadline = budget_clock() + LOWER_TIME_BUDGET_S

    # ----------------------------------------------------------------- entry
    def grammar(self) -> ir.Grammar:
        body = self.lower(self.refs.root)
        if body == ir.NOTHING:
            raise ConstraintError("JSON Schema is unsatisfiable: no JSON value is valid against it")
        self.rules["start"] = body
        return ir.Grammar(self.rules, "start", list(dict.fromkeys(self.annotations)))

    def check_time(self, ptr: str) -> None:
        """Fail closed long before a caller's timeout (called wherever lowering loops)."""
        if budget_clock() > self.deadline:
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

    def note(self, text: str) -> None:
        self.annotations.append(text)

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}_{self._counter}"

    # ------------------------------------------------------------- lowering
    def lower(self, node: Node, memo: bool = True) -> Expr:
        """The JSON text language of the values valid against `node`."""
        self.check_time(node.ptr)
        expr = self._lower(node, memo)
        if not self.split or expr == ir.NOTHING or isinstance(expr, (ir.Literal, ir.RuleRef, ir.CharClass)):
            return expr
        # split mode: its own rule, made non-regular by an alternative that derives nothing
        if _DEAD not in self.rules:
            self.rules[_DEAD] = ir.seq(literal("\x00"), ir.RuleRef(_DEAD))
        name = self.fresh("value")
        self.rules[name] = alt(expr, ir.RuleRef(_DEAD))
        return ir.RuleRef(name)

    def _lower(self, node: Node, memo: bool) -> Expr:
        s = node.schema
        if s is True or s == {} or (isinstance(s, dict) and not set(s) & _all_validation()):
            return self.any_value()
        if s is False:
            return ir.NOTHING
        if isinstance(s, dict) and "$ref" in s and not (set(s) & (_all_validation() - {"$ref"})):
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
            self.rules[name] = ir.NOTHING  # placeholder while the body is lowered (recursion)
            body = build()
            self.rules[name] = body
            if body == ir.NOTHING:
                self._empty_rules.add(name)
        if name in self._empty_rules:
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
            self.unsupported(f"{node.ptr}/{key}", key, "not supported by this compiler")
        if "enum" in d:
            return self.lower_enum(d, node)
        if any(k in d for k in ("anyOf", "_oneOfs", "not", "_conds")):
            return self.composition.lower(d, node)
        return self.lower_types(d, node)

    def lower_enum(self, d: dict, node: Node) -> Expr:
        self.check_time(node.ptr)
        values = [v for v in d["enum"] if all(self.valid(v, src) for src in d["_sources"]) and _markers_allow(d, v)]
        unique = {canon(v): v for v in values}
        return alt(*(value_text(v, self.ws) for v in unique.values())) if unique else ir.NOTHING

    def lower_types(self, d: dict, node: Node) -> Expr:
        types = type_set(d)
        parts = []
        excluded = d.get("_not_enum", [])
        self._check_structured_exclusions(d, node, excluded)
        for t in TYPES:
            if t not in types or (t == "integer" and "number" in types):
                continue
            if t == "null":
                if not any(v is None for v in excluded):  # `not: {const: null}`
                    parts.append(literal("null"))
            elif t == "boolean":
                parts.extend(literal(json.dumps(b)) for b in (True, False) if not any(v is b for v in excluded))
            elif t == "object":
                parts.append(json_objects.lower_object(self, d, node))
            elif t == "array":
                parts.append(json_arrays.lower_array(self, d, node))
            elif t == "string":
                parts.append(json_scalars.lower_string(self, d, node))
            else:
                parts.append(json_scalars.lower_number(self, d, node, integer=t == "integer"))
        return alt(*parts) if parts else ir.NOTHING

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
            scalars = [literal("null"), literal("true"), literal("false"), NUMBER_TEXT, any_string()]
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

    def valid(self, value, node: Node) -> bool:
        """`jsonschema`'s verdict for `value` against a (possibly synthetic) Node."""
        s = node.schema
        if isinstance(s, dict) and any(isinstance(m, Node) for m in s.get("allOf", [])):
            return all(self.valid(value, m) for m in s["allOf"])
        if isinstance(s, dict) and isinstance(s.get("not"), Node):
            return not self.valid(value, s["not"])
        quick = quick_valid(value, s)  # string enums under plain string schemas: no jsonschema call
        if quick is not None:
            return quick
        validator = self._validator()
        try:
            sub = validator.evolve(schema=s)
            if node.base != self.refs.root.base:
                sub = validator.evolve(schema={"$id": node.base, **s}) if isinstance(s, dict) else sub
            return sub.is_valid(value)
        except Exception as exc:  # noqa: BLE001 - a schema jsonschema cannot evaluate
            raise self.fail(node.ptr, f"cannot evaluate enum/const against this schema: {exc}") from None

    def _validator(self):
        v = self._validators.get("root")
        if v is None:
            started = budget_clock()  # a first import of jsonschema's format checkers takes seconds:
            import jsonschema           # not lowering work, so not counted against the budget

            root = self.refs.root.schema
            cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
            v = self._validators["root"] = cls(root, format_checker=cls.FORMAT_CHECKER)
            self.deadline += budget_clock() - started
        return v


def _markers_allow(d: dict, v) -> bool:
    """Constraints that composition adds as markers rather than as schema sources."""
    if isinstance(v, str):
        if any(re.search(p, v) is None for p in d.get("_patterns", [])):
            return False
        if any(re.search(p, v) is not None for p in d.get("_not_patterns", [])):
            return False
    if isinstance(v, (int, float)) and not isinstance(v, bool) and d.get("_not_integer"):
        if float(v).is_integer():
            return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if any(float(v).is_integer() and int(v) % m == 0 for m in d.get("_not_multiple_of", [])
               if isinstance(m, int) and m > 0):
            return False
    if canon(v) in {canon(x) for x in d.get("_not_enum", [])}:
        return False
    if isinstance(v, dict) and any(all(n in v for n in group) for group in d.get("_forbid", [])):
        return False
    return True


def _is_synthetic(s: dict) -> bool:
    return any(isinstance(v, Node) for v in s.get("allOf", ())) or isinstance(s.get("not"), Node)


def _node_key(node: Node):
    s = node.schema
    if isinstance(s, dict) and _is_synthetic(s):
        members = s.get("allOf") or [s["not"]]
        return ("allOf" if "allOf" in s else "not",) + tuple(_node_key(m) for m in members)
    return ("raw", id(s), node.base)


def _all_validation():
    from .json_merge import VALIDATION
    return VALIDATION


from .json_compile import compile_json_schema  # noqa: E402,F401 - GrammarCompiler looks for it here
