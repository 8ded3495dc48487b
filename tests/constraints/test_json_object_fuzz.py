"""Soundness (and, member order aside, exactness) of object schemas whose evaluation depends on
which members are present, against jsonschema: random schemas from object_fuzz.py, random small
objects, fed byte by byte. An accepted invalid instance fails the test; so does a rejected valid
one unless the compile noted an approximation or some member order of it is accepted
(declaration-order generation). Default run: 2 x 40 schemas; `-m slow`: 4 x 400."""

from __future__ import annotations

import itertools
import json

import pytest
from json_verdicts import BYTE_COMPILER, accepts, valid
from object_fuzz import ObjectFuzz

from deepinfer.constraints import ConstraintError


def _check(seed: int, schemas: int) -> int:
    gen, compiled = ObjectFuzz(seed), 0
    for _ in range(schemas):
        schema = gen.schema()
        try:
            notes = BYTE_COMPILER.compile_json_schema(schema).grammar.annotations
        except ConstraintError as exc:
            assert "unsatisfiable" in str(exc), (schema, str(exc))  # every keyword here is enforced
            continue
        compiled += 1
        approximate = any("not exact" in n or "sound" in n for n in notes)
        for _ in range(10):
            value = gen.instance()
            text = json.dumps(value, separators=(",", ":"))
            ok = valid(schema, text)
            if accepts(schema, text):
                assert ok, f"accepted invalid {text} for {json.dumps(schema)}"
            elif ok and not approximate:
                orders = itertools.permutations(value.items()) if isinstance(value, dict) else ()
                assert any(accepts(schema, json.dumps(dict(p), separators=(",", ":"))) for p in orders), \
                    f"rejected valid {text} for {json.dumps(schema)}"
    return compiled


@pytest.mark.parametrize("seed", [11, 12])
def test_object_schemas_against_jsonschema(seed):
    assert _check(seed, 40) > 25


@pytest.mark.slow
@pytest.mark.parametrize("seed", [21, 22, 23, 24])
def test_object_schemas_against_jsonschema_many(seed):
    assert _check(seed, 400) > 300
