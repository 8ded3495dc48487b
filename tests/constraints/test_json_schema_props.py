"""Property tests: generated schemas and instances against `jsonschema`.

Schemas come from a small strategy over the keywords the front end enforces;
instances from hypothesis-jsonschema (valid ones, reordered to the declared
property order the grammar generates) and from a generic JSON strategy (mostly
invalid ones). Soundness: every text the grammar accepts is valid. Completeness
on json.dumps output of valid instances, for the keywords lowered exactly.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema

hjs = pytest.importorskip("hypothesis_jsonschema")

NAMES = st.sampled_from(["a", "b", "id", "name", "x-y", "é"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-50, 50), st.sampled_from(["", "a", "ab", "x1"]))


def _leaf():
    integer = st.fixed_dictionaries({"type": st.just("integer")}, optional={
        "minimum": st.integers(-20, 20), "maximum": st.integers(-20, 40), "exclusiveMinimum": st.integers(-20, 20)})
    number = st.fixed_dictionaries({"type": st.just("number")}, optional={
        "minimum": st.sampled_from([-1.5, 0, 0.25, 3]), "maximum": st.sampled_from([0, 1, 2.75, 100])})
    string = st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 5),
        "pattern": st.sampled_from(["^[a-c]*$", "b", "^x\\d?$", "^.{2}$"])})
    enum = st.builds(lambda vs: {"enum": vs}, st.lists(SCALARS, min_size=1, max_size=4, unique_by=json.dumps))
    return st.one_of(integer, number, string, enum, st.just({"type": "boolean"}), st.just({"type": "null"}))


def _extend(children):
    obj = st.builds(
        lambda props, req, addl: {"type": "object", "properties": props,
                                  "required": sorted(set(req) & set(props)), "additionalProperties": addl},
        st.dictionaries(NAMES, children, max_size=3), st.lists(NAMES, max_size=3),
        st.sampled_from([False, True, {"type": "integer"}]))
    arr = st.builds(lambda items, lo, extra: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + extra},
                    children, st.integers(0, 2), st.integers(0, 2))
    any_of = st.builds(lambda xs: {"anyOf": xs}, st.lists(children, min_size=1, max_size=3))
    return st.one_of(obj, arr, any_of)


SCHEMAS = st.recursive(_leaf(), _extend, max_leaves=6)
JSON = st.recursive(SCALARS | st.floats(-10, 10, allow_nan=False, width=32),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(NAMES, c, max_size=3), max_leaves=8)


def _validator(schema):
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _ordered(value, schema) -> list:
    """The instance with object members in the declared order (extras last), once per anyOf branch."""
    if isinstance(schema, dict) and "anyOf" in schema:
        return [v for branch in schema["anyOf"] for v in _ordered(value, branch)]
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        props = schema["properties"]
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return [{k: _ordered(value[k], props.get(k, schema.get("additionalProperties")))[0] for k in keys}]
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [[_ordered(v, schema["items"])[0] for v in value]]
    return [value]


def _lower(schema):
    try:
        return lower_json_schema(schema)
    except ConstraintError:
        return None  # unsatisfiable combinations are reported, not lowered


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(SCHEMAS, st.lists(JSON, min_size=1, max_size=6))
def test_accepted_texts_are_valid(schema, values):
    grammar = _lower(schema)
    if grammar is None:
        return
    validator = _validator(schema)
    for value in values:
        text = json.dumps(value, ensure_ascii=False)
        if matches(grammar, text):
            assert validator.is_valid(json.loads(text)), f"accepted invalid {text} for {schema}"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), SCHEMAS)
def test_valid_instances_are_accepted(data, schema):
    grammar = _lower(schema)
    if grammar is None:
        return
    try:
        value = data.draw(hjs.from_schema(schema))
    except Exception:  # noqa: BLE001 - hypothesis-jsonschema cannot satisfy every generated schema
        return
    texts = [json.dumps(v, ensure_ascii=False) for v in _ordered(value, schema)]
    text = texts[0]
    if "e" in text.lower().replace("true", "").replace("false", "").replace("null", "") and \
            any(k in json.dumps(schema) for k in ("minimum", "maximum")):
        return  # bounded numbers are generated without exponents (documented)
    assert any(matches(grammar, t) for t in texts), f"valid {text} rejected for {schema}"
