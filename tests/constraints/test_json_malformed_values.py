"""Malformed keyword values fail closed (json_values.py), and strings with a lone surrogate (legal
JSON: "\\ud83d") are emitted by their escape (json_strings.encode_text).

jsonschema does not ignore a value of the wrong type: it applies it as Python reads it
(`minimum: true` is `minimum: 1`, `uniqueItems: 1` is truthy, `exclusiveMinimum: true` outside
draft-04 is the number 1). Dropping such a value let invalid instances through, and some crashed
the lowering with TypeError / OverflowError; each must raise ConstraintError naming its pointer."""

import re

import pytest

from deepinfer.constraints import ConstraintError

from json_verdicts import BYTE_COMPILER as _COMPILER, accepts as _accepts, valid as _valid

D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D20 = "https://json-schema.org/draft/2020-12/schema"
INF = float("inf")

MALFORMED = [  # (schema, the pointer the error must name, a fragment of the message)
    ({"type": "number", "minimum": True}, "/minimum", "expected a number, got true"),
    ({"type": "integer", "maximum": False}, "/maximum", "got false"),
    ({"type": "number", "maximum": "3"}, "/maximum", 'got "3"'),
    ({"type": "number", "minimum": INF}, "/minimum", "Infinity is not a JSON number"),
    ({"type": "number", "minimum": float("nan")}, "/minimum", "NaN is not a JSON number"),
    ({"type": "number", "exclusiveMinimum": True}, "/exclusiveMinimum", "a number"),       # 2020-12
    ({"exclusiveMaximum": False}, "/exclusiveMaximum", "a number"),
    ({"$schema": D7, "type": "number", "minimum": 0, "exclusiveMinimum": True}, "/exclusiveMinimum", "number"),
    ({"$schema": D20, "exclusiveMaximum": True}, "/exclusiveMaximum", "number"),
    ({"type": "number", "multipleOf": True}, "/multipleOf", "greater than 0"),
    ({"type": "integer", "multipleOf": -2}, "/multipleOf", "greater than 0"),
    ({"type": "array", "uniqueItems": 1}, "/uniqueItems", "expected a boolean, got 1"),
    ({"type": "array", "uniqueItems": "yes"}, "/uniqueItems", "a boolean"),
    ({"type": "string", "pattern": 5}, "/pattern", "expected a string, got 5"),
    ({"type": "string", "format": 5}, "/format", "a string"),
    ({"type": "string", "maxLength": INF}, "/maxLength", "Infinity is not a JSON number"),
    ({"type": "string", "maxLength": True}, "/maxLength", "non-negative integer"),
    ({"type": "string", "maxLength": 2.5}, "/maxLength", "non-negative integer"),
    ({"type": "string", "minLength": -1}, "/minLength", "non-negative integer"),
    ({"type": "array", "minItems": "2"}, "/minItems", "non-negative integer"),
    ({"type": "array", "maxItems": INF}, "/maxItems", "Infinity is not a JSON number"),
    ({"type": "object", "minProperties": 1.5}, "/minProperties", "non-negative integer"),
    ({"type": "array", "contains": {}, "maxContains": True}, "/maxContains", "non-negative integer"),
    ({"type": "object", "required": True}, "/required", "an array of strings"),
    ({"type": "object", "required": "ab"}, "/required", "an array of strings"),            # requires a, b
    ({"type": "object", "required": [1]}, "/required", "an array of strings"),
    ({"type": "object", "dependentRequired": {"a": [1]}}, "/dependentRequired", "arrays of strings"),
    ({"type": "object", "dependencies": {"a": [1]}}, "/dependencies", "arrays of strings"),
    ({"type": 5}, "/type", "type name"),
    ({"allOf": 5}, "/allOf", "an array of schemas"),
    ({"type": "array", "prefixItems": 5}, "/prefixItems", "an array of schemas"),
    ({"enum": [1, {"a": 1}], "additionalProperties": 3}, "/additionalProperties", "a schema"),
    ({"allOf": [{"type": "integer"}, {"propertyNames": 3}]}, "/allOf/1/propertyNames", "a schema"),
    ({"type": "object", "patternProperties": {"(": {}}}, "/patternProperties", "valid regexes"),
    ({"$schema": D20, "type": "array", "items": [{"type": "integer"}]}, "/items", "prefixItems"),
    # where the value sits: under properties, items, anyOf, not, a $ref target
    ({"type": "object", "properties": {"a": {"minimum": True}}}, "/properties/a/minimum", "a number"),
    ({"type": "array", "items": {"maxLength": -3}}, "/items/maxLength", "non-negative"),
    ({"anyOf": [{"type": "string"}, {"type": "number", "maximum": None}]}, "/anyOf/1/maximum", "got null"),
    ({"type": "number", "not": {"minimum": True}}, "/not/minimum", "a number"),
    ({"$defs": {"d": {"uniqueItems": 0}}, "$ref": "#/$defs/d"}, "/$defs/d/uniqueItems", "a boolean"),
]


@pytest.mark.parametrize("schema,pointer,message", MALFORMED)
def test_malformed_value_raises_constraint_error_naming_its_pointer(schema, pointer, message):
    with pytest.raises(ConstraintError) as info:
        _COMPILER.compile_json_schema(schema)
    assert f"JSON Schema {pointer}: " in str(info.value)
    assert message in str(info.value)


WELL_FORMED = [  # (schema, text): compiles, and the matcher agrees with jsonschema
    ({"$schema": D4, "type": "number", "minimum": 0, "exclusiveMinimum": True}, "0"),   # draft-04 flags
    ({"$schema": D4, "type": "number", "minimum": 0, "exclusiveMinimum": True}, "0.5"),
    ({"$schema": D4, "type": "integer", "maximum": 3, "exclusiveMaximum": False}, "3"),
    ({"$schema": D4, "type": "integer", "maximum": 3, "exclusiveMaximum": True}, "3"),
    ({"type": "string", "maxLength": 2.0}, '"ab"'),                     # an integral float count
    ({"type": "string", "maxLength": 2.0}, '"abc"'),
    ({"type": "array", "minItems": 2.0}, "[1]"),
    ({"type": "integer", "minimum": 10 ** 30}, str(10 ** 30)),          # a big int bound is a number
    ({"$schema": D4, "type": "array", "minContains": -1, "maxContains": True}, "[1]"),  # not in draft-04
    ({"$schema": D7, "$ref": "#/definitions/a", "minimum": True, "definitions": {"a": {"type": "integer"}}}, "0"),
]


@pytest.mark.parametrize("schema,text", WELL_FORMED)
def test_well_formed_and_ignored_values_still_compile(schema, text):
    assert _accepts(schema, text) == _valid(schema, text)


LONE = "\ud83d"
SURROGATES = [  # (schema, text): the value spelled with its escape is accepted like jsonschema does
    ({"const": LONE}, '"\\ud83d"'),
    ({"const": LONE}, '"a"'),
    ({"enum": [LONE, "a"]}, '"\\ud83d"'),
    ({"enum": [LONE, "a"]}, '"a"'),
    ({"enum": ["x\udc00y", 1]}, '"x\\udc00y"'),
    ({"enum": ["\ud83d\ude00", "a"]}, '"a"'),            # no JSON text decodes to this pair of chars
    ({"type": "string", "not": {"const": LONE}}, '"\\ud83d"'),
    ({"type": "string", "not": {"enum": [LONE, "b"]}}, '"c"'),
    ({"type": "object", "properties": {LONE: {"type": "integer"}}, "required": [LONE],
      "additionalProperties": False}, '{"\\ud83d":1}'),
    ({"type": "object", "properties": {LONE: {"type": "integer"}}, "additionalProperties": False},
     '{"\\ud83d":"x"}'),
    ({"type": "array", "items": {"enum": [LONE, "x"]}, "uniqueItems": True}, '["\\ud83d","x"]'),
    ({"type": "array", "items": {"enum": [LONE, "x"]}, "uniqueItems": True}, '["\\ud83d","\\ud83d"]'),
    ({"type": "object", "patternProperties": {LONE: {"type": "integer"}}}, '{"a":"x"}'),
    ({"type": "string", "pattern": "a|" + LONE}, '"xa"'),
    ({"type": "string", "not": {"pattern": LONE}}, '"a"'),
]


@pytest.mark.parametrize("schema,text", SURROGATES)
def test_lone_surrogates_in_values_and_names(schema, text):
    assert _accepts(schema, text) == _valid(schema, text)


@pytest.mark.parametrize("schema", [{"const": "\ud83d\ude00"}, {"type": "string", "pattern": LONE}])
def test_a_value_no_json_text_has_is_unsatisfiable(schema):
    with pytest.raises(ConstraintError, match="unsatisfiable|empty language"):
        _COMPILER.compile_json_schema(schema)


@pytest.mark.parametrize("schema,message", [
    ('{"const": NaN}', "/const: NaN is not a JSON number"),  # json.loads reads it; JSON has no NaN
    ('{"enum": [1, Infinity]}', "/enum/1: Infinity is not a JSON number"),
    ('{"enum": [1e400]}', "/enum/0: Infinity is not a JSON number"),
    ({"properties": {1: {"type": "integer"}}}, "/properties: member name 1 is not a string"),
    ({"type": "array", "items": {"const": {1, 2}}}, "Object of type set is not JSON serializable"),
])
def test_input_that_is_not_json_is_refused_where_it_is(schema, message):
    with pytest.raises(ConstraintError, match=re.escape(message)):
        _COMPILER.compile_json_schema(schema)


@pytest.mark.parametrize("options,message", [
    ({"whitespace": "pretty"}, "whitespace must be one of"),
    ({"strict": None}, "strict must be True, False or a list of keyword names"),
    ({"strict": "pattern"}, "strict must be True, False or a list of keyword names"),  # not a substring test
])
def test_bad_options_are_constraint_errors(options, message):
    with pytest.raises(ConstraintError, match=message):
        _COMPILER.compile_json_schema({"type": "string", "pattern": "(?=a)"}, **options)


def test_python_dicts_nested_deeper_than_the_recursion_limit_compile_like_their_json_text():
    schema = {"type": "integer"}
    for _ in range(1200):
        schema = {"type": "array", "items": schema}
    _COMPILER.compile_json_schema(schema)  # was a RecursionError from json.dumps


def test_a_pydantic_model_without_json_schema_is_a_constraint_error():
    from typing import Callable

    from pydantic import BaseModel

    class Hook(BaseModel):
        run: Callable[[int], int]

    with pytest.raises(ConstraintError, match="Pydantic model Hook has no JSON Schema"):
        _COMPILER.compile_json_schema(Hook)


def test_an_invalid_regex_is_an_error_even_when_unenforced_keywords_may_be_skipped():
    with pytest.raises(ConstraintError, match=re.escape("/pattern: '(': invalid regex")):
        _COMPILER.compile_json_schema({"type": "string", "pattern": "("}, strict=False)
    skipped = _COMPILER.compile_json_schema({"type": "string", "pattern": "(a)\\1"}, strict=False)
    assert any(a.startswith("skipped /pattern") for a in skipped.annotations)  # valid, not regular


@pytest.mark.parametrize("schema", [{"type": "object", "minProperties": 2}, {"minProperties": 2}])
def test_skipping_min_properties_generates_objects_instead_of_none(schema):
    """Only undeclared members could reach minProperties: skipped, it is not enforced (it used to
    leave no object at all, reported as an unsatisfiable schema)."""
    from deepinfer.constraints import Matcher

    compiled = _COMPILER.compile_json_schema(schema, strict=False)
    assert any(a.startswith("skipped /minProperties") for a in compiled.annotations)
    assert Matcher(compiled).accept_string('{"a": 1}')
    with pytest.raises(ConstraintError, match="minProperties"):
        _COMPILER.compile_json_schema(schema)


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "number", "minimum": 1e-300, "maximum": 1e300}, "/maximum: `maximum`"),
    ({"type": "number", "minimum": -1e300, "maximum": 1}, "/minimum: `minimum`"),
    ({"type": "number", "minimum": 0.5, "exclusiveMaximum": 1e300}, "/exclusiveMaximum: `exclusiveMaximum`"),
])
def test_a_bound_too_large_to_compare_is_named_where_it_is(schema, pointer):
    with pytest.raises(ConstraintError, match=re.escape(pointer) + ".*too large to compare exactly"):
        _COMPILER.compile_json_schema(schema)
