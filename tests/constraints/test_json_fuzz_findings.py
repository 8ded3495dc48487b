"""Soundness bugs the random-schema fuzz (test_json_schema_fuzz.py and its wider variant) found
outside negation: each row is a schema, a JSON text it used to accept though jsonschema rejects
the value, and a text it must still accept."""

import json

import jsonschema
import pytest

from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema

DRAFT7 = "http://json-schema.org/draft-07/schema#"
ROWS = [
    # minLength counts code points: a surrogate-pair escape is one character, not two (counted
    # strings leave surrogate escapes out; the emoji itself is still allowed, raw)
    ({"type": "string", "minLength": 3}, '"\\ud83d\\ude00x"', '"\U0001F600xy"'),
    ({"type": "string", "minLength": 2, "maxLength": 2}, '"\\uD83D\\uDE00"', '"\U0001F600a"'),
    # draft-07 has no minContains: `contains` still needs one matching item
    ({"$schema": DRAFT7, "properties": {"b": {"contains": {}, "minContains": 0}}}, '{"b": []}', '{"b": [1]}'),
]


@pytest.mark.parametrize("schema,rejected,accepted", ROWS)
def test_fuzz_findings_stay_fixed(schema, rejected, accepted):
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert not validator.is_valid(json.loads(rejected)) and validator.is_valid(json.loads(accepted))
    grammar = lower_json_schema(schema)
    assert not matches(grammar, rejected), rejected
    assert matches(grammar, accepted), accepted


def test_surrogate_escapes_are_left_out_of_counted_strings():
    """Sound, not complete: a lone surrogate (one character to json.loads) or a pair escape (one
    character) is never generated in a length-counted string; other \\u escapes count one each."""
    grammar = lower_json_schema({"type": "string", "minLength": 1, "maxLength": 2})
    assert not matches(grammar, '"\\ud83d"') and not matches(grammar, '"\\ud83d\\ude00"')
    assert matches(grammar, '"\\ud7ff"') and matches(grammar, '"\\ue000\\u00e9"') and matches(grammar, '"\U0001F600"')


@pytest.mark.parametrize("schema,rejected,accepted", [
    # draft-07 has no dependentSchemas: `if` is always true here, so `then` applies to every object
    ({"$schema": DRAFT7, "properties": {"id": {"if": {"dependentSchemas": {"x": {"type": "number"}}},
                                               "then": {"type": "string"}}}}, '{"id": {"x": null}}', '{"id": "s"}'),
    # draft-07 has no prefixItems: `items: false` leaves only the empty array
    ({"$schema": DRAFT7, "properties": {"a": {"oneOf": [{"items": False, "prefixItems": [{}]}]}}},
     '{"a": [null]}', '{"a": []}'),
])
def test_keywords_newer_than_the_schemas_draft_are_ignored(schema, rejected, accepted):
    test_fuzz_findings_stay_fixed(schema, rejected, accepted)


DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"


def test_keywords_older_than_the_schemas_draft_are_ignored():
    """2020-12 has no `dependencies` / `additionalItems`: inside `not` they must not relax anything."""
    for schema in ({"$schema": DRAFT2020, "type": "object", "not": {"dependencies": {"a": ["b"]}}},
                   {"$schema": DRAFT2020, "type": "array", "not": {"additionalItems": False}}):
        with pytest.raises(ConstraintError, match="unsatisfiable"):  # not {}: nothing is valid
            lower_json_schema(schema)
    # without $schema, draft-07's reading stays: dependencies are enforced
    assert not matches(lower_json_schema({"dependencies": {"a": ["b"]}}), '{"a": 1}')
