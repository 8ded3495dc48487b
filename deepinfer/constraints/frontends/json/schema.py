"""JSON Schema -> grammar IR (the entry point `lower_json_schema`).

Owns what a caller hands in and gets back: loading (dict, JSON text, Pydantic
model class), the options (whitespace, strictness, nesting of unconstrained
values, split mode, the recursion limit deep schemas need) and `unsplit`.
The walk itself is json_lowerer's Lowerer: `$ref` rules, composition (`enum`/
`const`, `anyOf`, `oneOf` when its branches are provably disjoint, `not` and
`if`/`then`/`else` in the forms that can be enforced) and dispatch by `type`.
Fail closed: a validation keyword that is not enforced raises ConstraintError
naming the keyword and its JSON pointer, unless `strict=False` (or a list of
keyword names) allows skipping it, which is then recorded in
`Grammar.annotations`. Knows nothing about tokens or automata.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from deepinfer.constraints import ir
from deepinfer.constraints.errors import ConstraintError

from .digits import check_limit
from .dynamic_refs import static_refs
from deepinfer.constraints.ir import alt

from .keywords import KEYWORDS
from .lowerer import DEAD_RULE, Lowerer
from .text import Whitespace

DEFAULT_ANY_DEPTH = None  # unconstrained values nest freely (recursive rule, context-free back end)


def lower_json_schema(schema, *, whitespace: str = "default", strict: bool | list[str] = True,
                      any_depth: int | None = DEFAULT_ANY_DEPTH, split: bool = False,
                      unique_matcher: bool = False, length_caps: frozenset = frozenset(),
                      deadline: float | None = None, unknown_formats: str = "annotate",
                      number_digits: int | None = None) -> ir.Grammar:
    """Lower a JSON Schema (dict, JSON text or Pydantic model class) to an IR grammar.

    whitespace: "default" (json.dumps/pretty-printer whitespace, bounded runs), "compact"
    (none) or "unbounded". strict: True fails on any keyword that is not enforced; False
    (or a list of keyword names) skips those (all, or the named ones) and records them in
    `Grammar.annotations`. any_depth: how deep unconstrained values (`{}`, `true`) may
    nest; None makes them recursive (context-free back end). split: put every sub-schema
    in its own non-regular rule (same language), for the context-free back end.
    unique_matcher: `uniqueItems` over unbounded item sets is left to the matcher
    (the caller wraps the automaton, see lowered.py); the grammar then says so
    in its annotations. length_caps: the (pointer, base URI) of the `maxLength` nodes whose
    strings are left unbounded for the matcher to count (caps.capped_nodes; the caller
    wraps the automaton in length_caps.LengthCapAutomaton). deadline: the
    `jsonschema_import.lowering_clock()` value (thread CPU time) past which lowering fails
    (default: LOWER_TIME_BUDGET_S from now). unknown_formats: "annotate" (a `format` with no
    known language is an annotation, as JSON Schema 2019-09+ reads it, listed in
    `Grammar.annotations`) or "refuse" (a keyword not enforced: an error naming its pointer
    unless `strict` skips "format", which then reports it). number_digits: None (JSON's unbounded
    numbers) or N (at most N integer and N fraction digits and 3 exponent digits, json_digits).
    """
    lowerer = Lowerer(load_schema(schema), Whitespace(whitespace), strict, any_depth, KEYWORDS)
    if deadline is not None:
        lowerer.deadline = deadline
    lowerer.split = split
    lowerer.unique_matcher = unique_matcher
    lowerer.capped = length_caps
    lowerer.unknown_formats = _unknown_formats(unknown_formats)
    lowerer.number_digits = check_limit(number_digits)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # deep schemas recurse once per level
    try:
        return lowerer.grammar()
    except RecursionError:
        raise ConstraintError("JSON Schema nests too deeply to compile") from None
    finally:
        sys.setrecursionlimit(limit)


def _unknown_formats(value) -> str:
    if value not in ("annotate", "refuse"):
        raise ConstraintError(f"unknown_formats must be 'annotate' or 'refuse', not {value!r}")
    return value


def unsplit(grammar: ir.Grammar) -> ir.Grammar:
    """A `split=True` grammar without its dead alternatives: the same language, and as
    regular as the plain lowering (sub-schemas stay separate rules, which build_nfa
    inlines). Why: a recursive schema used to be lowered twice (plain, then split)."""
    dead = ir.RuleRef(DEAD_RULE)
    rules = {}
    for name, body in grammar.rules.items():
        if name == DEAD_RULE:
            continue
        if isinstance(body, ir.Alt) and dead in body.items:
            body = alt(*(item for item in body.items if item != dead)) if len(body.items) > 1 else ir.NOTHING
        rules[name] = body
    return ir.Grammar(rules, grammar.start, list(grammar.annotations))


def load_schema(schema) -> Any:
    """The schema document as JSON values (dict or bool), checked to be JSON (see `check_json`)."""
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return static_refs(check_json(pydantic_schema(schema)))
    if isinstance(schema, (str, bytes)):
        try:
            return static_refs(check_json(json.loads(schema)))
        except json.JSONDecodeError as exc:
            raise ConstraintError(f"JSON Schema is not valid JSON: {exc}") from None
        except RecursionError:
            raise ConstraintError("JSON Schema nests too deeply to compile") from None
    if isinstance(schema, (dict, bool)):
        return static_refs(check_json(schema))
    raise ConstraintError(f"JSON Schema must be a dict, JSON text or Pydantic model class, "
                          f"not {type(schema).__name__}")


def pydantic_schema(model) -> Any:
    """A Pydantic model's JSON Schema; Pydantic's own refusal becomes a ConstraintError."""
    try:
        return model.model_json_schema()
    except Exception as exc:  # noqa: BLE001 - PydanticInvalidForJsonSchema, a bare BaseModel, ...
        raise ConstraintError(f"Pydantic model {getattr(model, '__name__', model)!s} has no JSON Schema: "
                              f"{type(exc).__name__}: {exc}") from None


MAX_NESTING = 10_000  # JSON levels; deeper documents fail before any recursive walk


def check_json(document) -> Any:
    """Fail closed on what is not JSON, by its pointer: a member name that is not a string
    (Python dicts may have int keys), NaN or Infinity (json.loads reads them, JSON has no
    such number; in `const`/`enum` the grammar would write them), other Python values.
    Walked with a stack: a document too deep to compile fails here, not by RecursionError."""
    stack = [(document, "", 0)]
    while stack:
        value, ptr, depth = stack.pop()
        if depth > MAX_NESTING:
            raise ConstraintError("JSON Schema nests too deeply to compile")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ConstraintError(f"JSON Schema {ptr or '/'}: member name {key!r} is not a string")
                stack.append((item, f"{ptr}/{key.replace('~', '~0').replace('/', '~1')}", depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{ptr}/{i}", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                name = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
                raise ConstraintError(f"JSON Schema {ptr or '/'}: {name} is not a JSON number")
        elif not (value is None or isinstance(value, (str, bool, int))):
            raise ConstraintError(f"JSON Schema {ptr or '/'}: a {type(value).__name__} is not a JSON value")
    return document

