"""`contains` with minContains, maxContains, minItems, maxItems and prefixItems, several of them
at once, and their negations: counted exactly (json_contains), differential against jsonschema
on every array of up to 4 items over a small alphabet. Before, maxContains, maxItems and
prefixItems next to `contains` were refused, two `contains` in an allOf could not be merged,
and minItems above minContains put the extra items after the matches."""

import itertools
import json

import pytest
from json_verdicts import assert_regex_verdicts

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json.schema import lower_json_schema

SCHEMAS = [
    {"type": "array", "contains": {"const": "a"}},
    {"type": "array", "contains": {"const": "a"}, "maxContains": 2},
    {"type": "array", "contains": {"const": "a"}, "minContains": 2, "maxContains": 3},
    {"type": "array", "contains": {"const": "a"}, "minContains": 0, "maxContains": 1},
    {"type": "array", "contains": {"const": "a"}, "maxItems": 3},
    {"type": "array", "contains": {"const": "a"}, "minItems": 3},
    {"type": "array", "contains": {"const": "a"}, "minContains": 2, "minItems": 3, "maxItems": 4},
    {"type": "array", "prefixItems": [{"type": "integer"}], "contains": {"const": "a"}},
    {"type": "array", "prefixItems": [{"const": "a"}], "items": {"type": "string"}, "contains": {"const": "a"},
     "maxContains": 1},
    {"type": "array", "items": {"type": "string"}, "contains": {"enum": ["a", "b"]}, "minContains": 2,
     "maxItems": 3},
    {"type": "array", "not": {"items": {"type": "string"}}, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}], "not": {"items": {"type": "string"}}},
    # several contains (allOf members, a negated items next to a contains), each with its own bounds
    {"type": "array", "allOf": [{"contains": {"const": "a"}}, {"contains": {"const": "b"}}]},
    {"type": "array", "allOf": [{"contains": {"const": "a"}, "minContains": 2},
                                {"contains": {"const": "b"}, "maxContains": 1}], "maxItems": 4},
    {"type": "array", "contains": {"const": "a"}, "not": {"items": {"type": "string"}}},
    {"type": "array", "allOf": [{"not": {"items": {"enum": ["a", "b"]}}}, {"not": {"items": {"enum": ["b", None]}}}],
     "maxItems": 2},
    # minContains / maxContains without their own contains mean nothing
    {"type": "array", "allOf": [{"contains": {"const": "a"}, "minContains": 2}, {"maxContains": 1}]},
    # no item matches
    {"type": "array", "not": {"contains": {"const": "a"}}},
    {"type": "array", "prefixItems": [{"type": "string"}], "not": {"contains": {"const": "a"}}},
]
VALUES = [list(v) for n in range(5) for v in itertools.product(["a", "b", 1], repeat=n)] + [None, {}, "a"]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:70] for s in SCHEMAS])
def test_contains_counts_are_exact(schema):
    assert assert_regex_verdicts(schema, VALUES).annotations == []


def test_a_contains_that_cannot_be_negated_for_max_contains_fails_closed_where_it_is():
    # maxContains needs the items that do not match; excluding 1 from all numbers is not enforced
    with pytest.raises(ConstraintError, match="/contains/not"):
        lower_json_schema({"type": "array", "contains": {"const": 1}, "maxContains": 1})


def test_several_contains_next_to_unique_items_over_a_finite_set_fail_closed():
    schema = {"type": "array", "uniqueItems": True, "items": {"enum": ["a", "b", 1]},
              "allOf": [{"contains": {"const": "a"}}, {"contains": {"const": "b"}}]}
    with pytest.raises(ConstraintError, match="/allOf/1/contains"):
        lower_json_schema(schema)
