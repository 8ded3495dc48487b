"""Objects whose members come in another order than declared are refused, as documented.

docs/constraints.md (Serialization, member order) says generation follows declaration order:
declared properties in the schema's order, then undeclared members, and an object in another order
is not accepted although JSON Schema allows it. Each row is a shape of a MaskBench schema that
rejects a valid instance for this reason alone: the instance is valid (checked with `jsonschema`),
refused as written, and accepted once its members are put in declaration order.
"""

from __future__ import annotations

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from json_table import dump

S = {"type": "string"}
I = {"type": "integer"}
N = {"type": "number"}

# (MaskBench case, schema, valid instance in another order, the same instance in declaration order)
ROWS = [
    ("Github_medium---o71265",  # optional members swapped
     {"type": "object", "properties": {"message": S, "code": {"type": ["string", "integer"]}, "field": S},
      "required": ["message"]},
     {"message": "m", "field": "f", "code": 1},
     {"message": "m", "code": 1, "field": "f"}),
    ("Glaiveai2K---calculate_area_bd151164",  # all required, in another order
     {"type": "object", "properties": {"base": N, "height": N, "radius": N, "width": N},
      "required": ["radius", "width", "height", "base"]},
     {"radius": 5, "width": 5, "height": 5, "base": 5},
     {"base": 5, "height": 5, "radius": 5, "width": 5}),
    ("JsonSchemaStore---fly",  # an undeclared member before the declared ones
     {"type": "object", "properties": {"app": S, "kill_timeout": I}},
     {"$schema": "s", "app": "a", "kill_timeout": 5},
     {"app": "a", "kill_timeout": 5, "$schema": "s"}),
    ("Github_medium---o83151",  # a patternProperties member before the declared ones
     {"type": "object", "patternProperties": {"^from": {"type": "object"}}, "properties": {"add": S},
      "required": ["from"]},
     {"from": {}, "add": "x"},
     {"add": "x", "from": {}}),
    ("JsonSchemaStore---swagger-2.0",  # each oneOf branch has its own order
     {"oneOf": [{"type": "object", "properties": {"description": S, "name": S, "in": {"enum": ["body"]},
                                                  "schema": {"type": "object"}},
                 "required": ["name", "in", "schema"], "additionalProperties": False},
                {"type": "object", "properties": {"required": {"type": "boolean"}, "in": {"enum": ["path"]},
                                                  "name": S},
                 "required": ["required", "in", "name"], "additionalProperties": False}]},
     {"in": "body", "name": "user", "schema": {}},
     {"name": "user", "in": "body", "schema": {}}),
]


@pytest.mark.parametrize("case,schema,shuffled,ordered", ROWS, ids=[r[0] for r in ROWS])
def test_other_member_order_refused(case, schema, shuffled, ordered):
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert validator.is_valid(shuffled) and validator.is_valid(ordered)
    grammar = lower_json_schema(schema)
    assert matches(grammar, dump(ordered))
    assert not matches(grammar, dump(shuffled)), (
        "an object in another order than declared is accepted: update docs/constraints.md "
        "(Serialization, member order) and README")
