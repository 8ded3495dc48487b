"""JSON Schema object members come in declaration order across allOf members.

The compiler emits an object's members in the order its schema declares them.
When properties come from several allOf members, some of them oneOf/anyOf or
$ref members, the order must still be the order of the schema text (allOf
member 0's properties, whatever their form, before member 1's). Every row is
first checked against `jsonschema`, then against the lowered grammar with the
reference IR matcher. The MaskBench case Github_trivial---o64859 is the first row.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from json_table import check_table_row, dump

S = {"type": "string"}
I = {"type": "integer"}
AB = {"type": "object", "properties": {"a": S, "b": I}, "required": ["a"]}
XY = {"type": "object", "properties": {"x": S, "y": I}, "required": ["x"]}
TAGGED = {"oneOf": [{"properties": {"k": {"const": "p"}, "p": I}, "required": ["k"]},
                    {"properties": {"k": {"const": "q"}, "q": S}, "required": ["k"]}]}

# (schema, valid instances in declaration order, invalid instances)
TABLE = [
    ({"allOf": [TAGGED, XY]},  # oneOf member first, then plain properties (the MaskBench shape)
     [{"k": "p", "p": 1, "x": "s", "y": 2}, {"k": "q", "q": "t", "x": "s"}],
     [{"k": "p", "p": "no", "x": "s"}, {"k": "q", "q": "t"}]),
    ({"allOf": [XY, TAGGED]},  # plain properties first, then the oneOf member
     [{"x": "s", "y": 2, "k": "p", "p": 1}, {"x": "s", "k": "q", "q": "t"}],
     [{"x": "s", "k": "r"}]),
    ({"allOf": [{"anyOf": [AB, {"properties": {"c": I}, "required": ["c"]}]}, XY]},
     [{"a": "s", "b": 1, "x": "t"}, {"c": 3, "x": "t", "y": 4}],
     [{"x": "t"}, {"a": "s", "y": 4}]),
    ({"$defs": {"tagged": TAGGED, "xy": XY},  # $ref members: the reference site's order counts
      "allOf": [{"$ref": "#/$defs/tagged"}, {"$ref": "#/$defs/xy"}]},
     [{"k": "p", "p": 1, "x": "s"}, {"k": "q", "q": "t", "x": "s", "y": 0}],
     [{"k": "q", "q": 1, "x": "s"}]),
    ({"allOf": [{"allOf": [{"$ref": "#/$defs/tagged"}]}, {"properties": {"z": I}}],
      "$defs": {"tagged": TAGGED}},
     [{"k": "p", "p": 1, "z": 3}, {"k": "q", "z": 3}],
     [{"k": "p", "z": "s"}]),
    ({"properties": {"x": S}, "oneOf": [{"properties": {"m": I}, "required": ["m"]},  # same object: keys in order
                                         {"properties": {"n": I}, "required": ["n"]}]},
     [{"x": "s", "m": 1}, {"x": "s", "n": 2}],
     [{"x": "s"}, {"m": 1, "n": 2}]),
    ({"allOf": [{"properties": {"b": I}}, {"properties": {"a": S, "b": I}},  # a member declaring all of
                {"properties": {"c": I}}]},  # another's names keeps its order in later merges too
     [{"a": "s", "b": 1, "c": 2}],
     [{"a": "s", "b": "t", "c": 2}]),
]


@pytest.mark.parametrize("schema,good,bad", TABLE, ids=[json.dumps(r[0])[:60] for r in TABLE])
def test_declaration_order(schema, good, bad):
    check_table_row(schema, good, bad)


def test_maskbench_o64859_shape():
    """allOf [oneOf of state branches, {builder, id, target}]: the branch's members come first."""
    branch = {"properties": {"current": {"minimum": 0, "type": "number"}, "state": {"enum": ["running"]},
                             "total": {"minimum": 0, "type": "number"}}, "required": ["state"], "type": "object"}
    stopped = {"properties": {"state": {"enum": ["stopped"]}}, "required": ["state"], "type": "object"}
    schema = {"allOf": [{"oneOf": [stopped, branch], "type": "object"},
                        {"properties": {"builder": {"type": "object"}, "id": {"type": "number"}},
                         "required": ["builder", "id"], "type": "object"}], "type": "object"}
    good = {"current": 50, "state": "running", "total": 100, "builder": {"n": 1}, "id": 1}
    assert jsonschema.validators.validator_for(schema)(schema).is_valid(good)
    grammar = lower_json_schema(schema)
    assert matches(grammar, dump(good))
    assert not matches(grammar, dump({**good, "current": -1}))
