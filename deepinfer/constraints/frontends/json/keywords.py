"""The JSON Schema walk's dispatch table: which module lowers each type, and composition.

`KEYWORDS` is what schema.py hands the Lowerer (lowering.Keywords): objects.py, arrays.py
and scalars.py lower their types, composition.py `anyOf`/`oneOf`/`not`/`if`; `null` and
`boolean` are one literal per value and are lowered here. The keyword modules import only
the `Lowering` protocol, never the walk, so this table is the one place that names them all.
Knows nothing about tokens or automata.
"""

from __future__ import annotations

import json

from deepinfer.constraints import ir
from deepinfer.constraints.ir import Expr, alt, literal

from .arrays import lower_array
from .composition import Composition
from .lowering import Keywords, Lowering
from .objects import lower_object
from .refs import Node
from .scalars import lower_number, lower_string


def lower_null(lw: Lowering, d: dict, node: Node) -> Expr:
    """`null`, unless `not: {const: null}` (or a oneOf / if negation) excludes it."""
    return ir.NOTHING if any(v is None for v in d.get("_not_enum", [])) else literal("null")


def lower_boolean(lw: Lowering, d: dict, node: Node) -> Expr:
    excluded = d.get("_not_enum", [])
    return alt(*(literal(json.dumps(b)) for b in (True, False) if not any(v is b for v in excluded)))


def lower_integer(lw: Lowering, d: dict, node: Node) -> Expr:
    return lower_number(lw, d, node, integer=True)


def lower_real(lw: Lowering, d: dict, node: Node) -> Expr:
    return lower_number(lw, d, node, integer=False)


KEYWORDS = Keywords(
    by_type={"null": lower_null, "boolean": lower_boolean, "object": lower_object, "array": lower_array,
             "string": lower_string, "number": lower_real, "integer": lower_integer},
    composition=Composition,
)
