"""Lookaheads in `pattern` (json_pattern_looks.py): leading ones and tempered repeats compile to
exactly re.search's language (less texts that end in a newline only Python's `$` lets in); the
same patterns under `not` stay sound; other lookarounds are still an error."""

import itertools
import json
import re

import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

PATTERNS = ["^((?!mode)(?!Mode).)*$", "^(?!\\s*$).+", "^(?=.*[A-Z])(?=.*\\d).{3,}$", "(?!ab)a", "^(?!a)",
            "^(?!ab$)[ab]*$", "^((?!ab).)+$", "^(?!.*\\.\\.)[a-z.]+$", "^(?:(?!a$)[ab]){2,3}$",
            "^(?:(?!$).){1,3}$", "^(?:(?!\\s)[ab]){1,3}$", "(?!x)a|b", "^(?!x).|ab|.b"]
TEXTS = [""] + ["".join(p) for n in range(1, 5) for p in itertools.product("aAb1 .\n", repeat=n)] + \
    ["mode", "xModex", "amodeb", "a..b", "a.b"]


def _language(schema: dict):
    return re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact")), re.S)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_lookaheads_have_re_search_semantics(pattern):
    rx = _language({"type": "string", "pattern": pattern})
    for text in TEXTS:
        accepted = rx.fullmatch(json.dumps(text)) is not None
        matches = re.search(pattern, text) is not None
        assert accepted <= matches, f"accepted {text!r}"
        if not text.endswith("\n"):
            assert accepted == matches, f"rejected {text!r}"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_negated_lookaheads_are_sound(pattern):
    try:
        rx = _language({"type": "string", "not": {"pattern": pattern}})
    except ConstraintError as exc:  # an empty complement: fine, if nothing is left
        assert "unsatisfiable" in str(exc) and all(re.search(pattern, t) for t in TEXTS)
        return
    for text in TEXTS:
        if rx.fullmatch(json.dumps(text)) is not None:
            assert re.search(pattern, text) is None, f"accepted {text!r}"


@pytest.mark.parametrize("pattern", ["x(?=y)", "(?<=a)b", "^a(?!b)c", "^((?!a)b|c)*$"])
def test_other_lookarounds_are_errors(pattern):
    with pytest.raises(ConstraintError, match="/pattern"):
        lower_json_schema({"type": "string", "pattern": pattern})
