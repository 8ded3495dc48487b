"""ECMA-262 `\\p{..}` general categories in patterns (json_unicode_props.py): Python's `re`
rejects them, JSON Schema (ECMA-262) allows them. Checked against `unicodedata` on sample
characters through the byte-level matcher; other properties fail closed, naming the escape."""

from __future__ import annotations

import json
import unicodedata

import pytest
from json_verdicts import accepts

from deepinfer.constraints import ConstraintError

SAMPLES = ["a", "Z", "é", "Ω", "ж", "日", "ǅ", "ʰ", "1", "٣", "Ⅻ", "½", "_", "-", "(", "«", "+", "$", "^", "©",
           " ", "\u2028", "\u00ad", "\u0301", "😀", "\u0903"]


def _cat(ch: str) -> str:
    return unicodedata.category(ch)


@pytest.mark.parametrize("pattern,member", [
    (r"^\p{L}$", lambda c: _cat(c)[0] == "L"),
    (r"^\p{Lu}$", lambda c: _cat(c) == "Lu"),
    (r"^\p{Letter}$", lambda c: _cat(c)[0] == "L"),
    (r"^\p{gc=Nd}$", lambda c: _cat(c) == "Nd"),
    (r"^\p{General_Category=Punctuation}$", lambda c: _cat(c)[0] == "P"),
    (r"^\P{L}$", lambda c: _cat(c)[0] != "L"),
    (r"^[\p{N}\p{Sc}]$", lambda c: _cat(c)[0] == "N" or _cat(c) == "Sc"),
    (r"^[^\p{L}\p{M}]$", lambda c: _cat(c)[0] not in "LM"),
    (r"^\p{LC}$", lambda c: _cat(c) in ("Lu", "Ll", "Lt")),
    (r"^[\P{Ll}x]$", lambda c: _cat(c) != "Ll" or c == "x"),
])
def test_general_categories(pattern, member):
    schema = {"type": "string", "pattern": pattern}
    for ch in SAMPLES + ["x"]:
        assert accepts(schema, json.dumps(ch, ensure_ascii=False)) == member(ch), (pattern, ch)


def test_names_in_a_typical_pattern():
    schema = {"type": "string", "pattern": r"^[\p{L}\p{M} .'-]{2,40}$"}
    for name, ok in [("José María", True), ("Zoë O'Neil", True), ("李小龙", True), ("R2-D2", False), ("x", False)]:
        assert accepts(schema, json.dumps(name, ensure_ascii=False)) == ok, name


@pytest.mark.parametrize("pattern", [r"\p{Script=Greek}", r"\p{sc=Latn}", r"\p{Alphabetic}", r"\p{Lx}"])
def test_other_properties_fail_closed(pattern):
    with pytest.raises(ConstraintError, match=r"/pattern: `pattern` is not enforced: .*\\p\{"):
        accepts({"type": "string", "pattern": pattern}, '"a"')


def test_escaped_backslash_before_p_is_a_literal():
    schema = {"type": "string", "pattern": r"^\\p\{L\}$"}
    assert accepts(schema, json.dumps("\\p{L}")) and not accepts(schema, '"a"')
