"""Soundness fuzz: random schemas (schema_fuzz.py), near-valid instances; every JSON text the
lowered grammar accepts must validate with `jsonschema` (the schema's own draft). Schemas the compiler refuses are skipped
(refusing is sound). Found the oneOf-disjointness and negated-integer bugs of
test_json_negation_soundness.py. The default run is short (3 x 150 schemas); the slow one covers 4 x 1,000."""

import json
import sys

import jsonschema
import pytest

from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema

from schema_fuzz import SchemaFuzz, WideSchemaFuzz


def fuzz(gen: SchemaFuzz, schemas: int, instances: int) -> dict:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    stats, failures = {"compiled": 0, "accepted": 0, "checked": 0}, []
    for _ in range(schemas):
        schema = gen.document()
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            continue
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        try:
            grammar = lower_json_schema(schema)
        except ConstraintError:
            continue
        stats["compiled"] += 1
        for _ in range(instances):
            value = gen.instance(schema)
            value = gen.mutate(value) if gen.chance(0.5) else value
            text = json.dumps(value, ensure_ascii=gen.chance(0.5))
            stats["checked"] += 1
            if matches(grammar, text):
                stats["accepted"] += 1
                if not validator.is_valid(json.loads(text)):
                    failures.append((json.dumps(schema), text))
    assert not failures, f"{len(failures)} invalid instances accepted, e.g. {failures[:3]}"
    return stats


@pytest.mark.parametrize("make,seed", [(SchemaFuzz, 11), (SchemaFuzz, 12), (WideSchemaFuzz, 13)])
def test_accepted_instances_validate(make, seed):
    stats = fuzz(make(seed), schemas=150, instances=8)
    assert stats["compiled"] > 80 and stats["accepted"] > 100   # the fuzz reaches the grammar


@pytest.mark.slow
@pytest.mark.parametrize("make", [SchemaFuzz, WideSchemaFuzz])
@pytest.mark.parametrize("seed", range(20, 22))
def test_accepted_instances_validate_many(make, seed):
    fuzz(make(seed), schemas=1000, instances=20)
