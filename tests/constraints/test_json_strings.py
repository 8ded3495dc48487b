"""String languages from several keywords: pattern ∧ pattern, pattern ∧ format, not pattern,
not integer; differential against jsonschema on a table of values (sound and, here, exact)."""

import json
import re
import sys

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

VALUES = ["", "a", "ab", "b", "xb", "abc", "a@b.co", "x.js", "x.jsx", "12", "٣", 0, 1, 2.5, -0.25, 1.0, 10,
          None, True, [], {}]

SCHEMAS = [
    {"type": "string", "not": {"pattern": "^a"}},
    {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]},
    {"type": "string", "pattern": "^[a-z@.]+$", "format": "email"},
    {"not": {"not": {"pattern": "x"}}},
    {"type": "string", "not": {"pattern": "^\\d+$"}, "maxLength": 3},
    {"properties": {"f": {"not": {"pattern": "\\.js$"}}}, "type": "object"},
    {"type": ["number", "string"], "not": {"type": "integer"}},
    {"type": "number", "minimum": -1, "maximum": 3, "not": {"type": "integer"}},
    {"enum": ["a", "ab", 1, 2.5], "not": {"anyOf": [{"pattern": "b"}, {"type": "integer"}]}},
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
]


def _check(value, schema):
    cls = jsonschema.Draft202012Validator
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:60] for s in SCHEMAS])
def test_string_keywords_against_jsonschema(schema):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # deep printed expressions
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact", any_depth=1)), re.S)
    for v in VALUES + [{"f": "x.js"}, {"f": "x.ts"}]:
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
        accepted = rx.fullmatch(text) is not None
        valid = _check(v, schema)
        assert not accepted or valid, f"accepted invalid {text}"
        if not (isinstance(v, float) and v.is_integer()):  # 1.0 spellings aside
            assert accepted == valid, f"rejected valid {text}"


@pytest.mark.parametrize("kind,test", [("s", str.isspace), ("d", str.isdecimal),
                                       ("w", lambda c: c.isalnum() or c == "_")])
def test_unicode_classes_are_python_s_exactly(kind, test):
    from deepinfer.constraints.frontends.json.pattern import _unicode_set

    ranges = _unicode_set(kind)
    inside = set()
    for lo, hi in ranges:
        inside.update(range(lo, hi + 1))
    assert inside == {cp for cp in range(sys.maxunicode + 1) if test(chr(cp))}
