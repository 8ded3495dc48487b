"""Soundness of exclusions (`not`, and the negations oneOf and if/then/else imply).

- `not: {const/enum}` of every JSON type: strings, integers, booleans and null are excluded exactly;
  an object or array value cannot be excluded from a grammar, so the schema is refused (fail
  closed), naming the `not` keyword's pointer. Found by a soundness fuzz of MaskBench's schemas:
  `Handwritten---mod302` (allOf with `not: {$ref: witness}`, the witness a 23-deep object) accepted
  its witness, and `not: {const: true}` accepted `true`.
- oneOf branch disjointness is judged without the schema's own composition keywords: `oneOf:
  [{}, {const: 2}]` used to accept 2 (valid under both branches), because 2 fails the whole
  schema, which made the branches look disjoint.
- a negated `type: integer` leaves no integer, also where a branch adds `type: integer` or an
  integral `multipleOf` (if/then/else accepted -1 and 0 below).
The last two were found by a random-schema fuzz (many keywords, near-valid instances)."""

import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json.schema import lower_json_schema

from json_table import check_table_row

EXACT = [  # (schema, valid instances, invalid instances)
    ({"type": "boolean", "not": {"const": True}}, [False], [True, 1]),
    ({"type": ["boolean", "integer"], "not": {"enum": [True, False]}}, [1], [True, False]),
    ({"type": ["null", "integer"], "not": {"const": None}}, [0, 7], [None]),
    ({"type": ["null", "boolean"], "not": {"enum": [False, None]}}, [True], [False, None]),
    ({"type": ["string", "boolean"], "not": {"enum": ["a", True]}}, ["b", False], ["a", True]),
    ({"type": "integer", "not": {"enum": [[1, 2], {"a": 1}, 3]}}, [2, 4], [3]),   # no array or object here
    ({"oneOf": [{"const": 2}, {"type": "integer"}]}, [3, -1], [2, "a"]),
    ({"oneOf": [{}, {"enum": [None, "a"]}]}, [1, "b", [], {}], [None, "a"]),
    ({"oneOf": [{"allOf": [{"multipleOf": 1}]}, {"anyOf": [{"type": "integer"}]}]}, [], [7, 0]),
    ({"if": {"type": "integer"}, "then": {"const": 1}, "else": {"type": "integer"}}, [1], [-1, 2, 2.5, "x"]),
    ({"properties": {"q": {"if": {"type": "integer"}, "then": {"minimum": 0.5}, "else": {"multipleOf": 2}}}},
     [{"q": 2}, {"q": 1}, {"q": "s"}, {}], [{"q": 0}, {"q": -2}]),
]

REFUSED = [  # (schema, pointer in the error)
    ({"type": "array", "items": {"type": "integer"}, "not": {"const": [1, 2]}}, "/not"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "not": {"const": {"a": 1}}}, "/not"),
    ({"type": "object", "not": {"enum": [{}, {"a": 5}]}}, "/not"),
    ({"type": ["array", "integer"], "not": {"const": [1, 2]}, "items": {"type": "string"}}, "/not"),
    ({"if": {"enum": ["a", {}]}, "then": {"type": "string"}}, "/not"),   # else: not the if's enum
    ({"oneOf": [{"const": 2}, {}]}, "/not"),     # 2 out of all numbers (2.0, 2e0, ...): not enforced
    ({"allOf": [{"type": "object"}, {"not": {"$ref": "#/$defs/w"}}], "$defs": {"w": {"const": {"a": {}}}}},
     "/allOf/1/not"),
]


@pytest.mark.parametrize("schema,good,bad", EXACT)
def test_excluded_scalars_are_left_out_exactly(schema, good, bad):
    check_table_row(schema, good, bad)


@pytest.mark.parametrize("schema,pointer", REFUSED)
def test_excluding_an_admitted_object_or_array_is_refused(schema, pointer):
    with pytest.raises(ConstraintError, match=f"{pointer}: `not` is not enforced"):
        lower_json_schema(schema)


def test_excluding_every_boolean_leaves_nothing():
    with pytest.raises(ConstraintError, match="unsatisfiable"):
        lower_json_schema({"type": "boolean", "not": {"enum": [True, False]}})


@pytest.mark.parametrize("schema,pointer,keyword", [  # (dependent schemas: test_json_dependent_schemas.py)
    ({"type": "object", "propertyNames": {"pattern": "^a", "oneOf": [{"maxLength": 2}, {"minLength": 1}]}},
     "/propertyNames", "propertyNames"),
])
def test_composition_inside_keywords_that_take_only_simple_schemas_is_refused(schema, pointer, keyword):
    """oneOf / if inside propertyNames normalize to internal markers; they were taken for
    annotations and dropped (the same happened in dependent schemas, which are now enforced)."""
    with pytest.raises(ConstraintError, match=f"{pointer}: `{keyword}` is not enforced"):
        lower_json_schema(schema)
