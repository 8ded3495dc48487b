"""Possessive quantifiers and atomic groups never backtrack (`re.search(r'^a*+a$', 'a')` is None),
so lowering them as greedy ones accepted strings that do not match: JSON Schema patterns
(json_pattern.py, Python's parser) refuse them with a ConstraintError naming the keyword's
pointer, as the regex front end (regex.py) does. A raw lone surrogate in a regex is refused like
its escape."""

import pytest

from deepinfer.constraints import ConstraintError, GrammarCompiler, Vocabulary

_VOCAB = Vocabulary.from_token_bytes([bytes([i]) for i in range(256)] + [None], eos_ids=[256])
_COMPILER = GrammarCompiler(_VOCAB)

POSSESSIVE = ["^a*+a$", "^a++a$", "^(?:ab)?+ab$", "^a{1,3}+a$", "^a{2}+$", "x[0-9]*+", "^(?:a|b)*+b$"]


@pytest.mark.parametrize("pattern", POSSESSIVE)
@pytest.mark.parametrize("wrap,pointer", [
    (lambda p: {"type": "string", "pattern": p}, "/pattern"),
    (lambda p: {"type": "string", "not": {"pattern": p}}, "/not"),
    (lambda p: {"type": "object", "patternProperties": {p: {"type": "integer"}, "b": {}},
                "additionalProperties": False}, "/patternProperties"),
    (lambda p: {"type": "object", "patternProperties": {p: True}, "additionalProperties": False},
     "/patternProperties"),
    (lambda p: {"type": "object", "propertyNames": {"pattern": p}}, "/propertyNames"),
    (lambda p: {"type": "array", "items": {"type": "string", "pattern": p}}, "/items/pattern"),
])
def test_possessive_quantifier_in_a_schema_is_refused(pattern, wrap, pointer):
    with pytest.raises(ConstraintError, match="possessive") as info:
        _COMPILER.compile_json_schema(wrap(pattern))
    assert f"JSON Schema {pointer}" in str(info.value)


def test_atomic_group_names_itself():
    with pytest.raises(ConstraintError, match="atomic group"):
        _COMPILER.compile_json_schema({"type": "string", "pattern": "^(?>a*)a$"})


@pytest.mark.parametrize("pattern", ["\ud83d", "a|\ud83d", "[\udc00-\udfff]"])
def test_raw_surrogate_in_a_regex_is_refused(pattern):
    with pytest.raises(ConstraintError, match="not a Unicode scalar value"):
        _COMPILER.compile_regex(pattern)
