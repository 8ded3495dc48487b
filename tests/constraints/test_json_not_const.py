"""`not: {const/enum}` of every JSON type: strings, numbers, booleans and null are excluded exactly;
an object or array value the rest of the schema admits cannot be excluded from a grammar, so the
schema is refused (fail closed), naming the `not` keyword's pointer. Found by a soundness fuzz of
MaskBench's schemas: `Handwritten---mod302` (allOf with `not: {$ref: witness}`, the witness a
23-deep object) accepted its witness, and `not: {const: true}` accepted `true`."""

import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json_schema import lower_json_schema

from json_table import check_table_row

EXACT = [  # (schema, valid instances, invalid instances)
    ({"type": "boolean", "not": {"const": True}}, [False], [True, 1]),
    ({"type": ["boolean", "integer"], "not": {"enum": [True, False]}}, [1], [True, False]),
    ({"type": ["null", "integer"], "not": {"const": None}}, [0, 7], [None]),
    ({"type": ["null", "boolean"], "not": {"enum": [False, None]}}, [True], [False, None]),
    ({"type": ["string", "boolean"], "not": {"enum": ["a", True]}}, ["b", False], ["a", True]),
    ({"type": ["array", "integer"], "not": {"const": [1, 2]}, "items": {"type": "string"}}, [["x"], 3], []),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False,
      "not": {"const": {"b": 1}}}, [{"a": 1}, {}], []),   # {"b": 1} is not admitted anyway: nothing to exclude
]

REFUSED = [  # (schema, pointer in the error)
    ({"type": "array", "items": {"type": "integer"}, "not": {"const": [1, 2]}}, "/not"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "not": {"const": {"a": 1}}}, "/not"),
    ({"type": "object", "not": {"enum": [{}, {"a": 5}]}}, "/not"),
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
