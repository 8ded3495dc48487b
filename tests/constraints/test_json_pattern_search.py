"""Top-level alternations in `pattern`: unanchored branches share one `.*(a|b).*` (the same
language as `.*a.*|.*b.*`, without the DFA that remembers which words it saw); end anchors
inside a pattern (json_pattern_ends.py). Differential against re.search, and a 30-name
unanchored patternProperties key compiles."""

import itertools

import json
import re

import pytest

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary
from deepinfer.constraints.frontends.json.regex import grammar_to_regex
from deepinfer.constraints.frontends.json.schema import lower_json_schema

PATTERNS = ["ab|cd", "ab|^cd", "ab|cd$", "a|b*", "x(y|z)|w", "(ab)|(cd)|e", "^$|ab|b",
            "ab|c(d|e)$", "a.c|[0-9]{2}|^z$", "(?:ab|cd)|ef"]
TEXTS = ["", "a", "b", "ab", "cd", "xabx", "xcd", "cdx", "ecd", "ex", "xe", "xy", "xz", "w", "zz",
         "12", "a1c", "z", "zz1", "abcd", "ef", "e\n"]


ENDS = [r"^(\/?((\.{2})|([a-z0-9\-]*))($|\/))*$", "a($|b)c", "(a$)?b", "x($|y)", "(ab$|c)d?",
        "^(a($|,))+$", "(a|b$){2,3}", "q(x$)*", "(a$|b)*c", "^(a|b$)c", "a(b|$)(c|$)"]
SHORT = [""] + ["".join(p) for n in range(1, 5) for p in itertools.product("ab/.c,x", repeat=n)]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_alternations_have_re_search_semantics(pattern):
    _check(pattern, TEXTS)


@pytest.mark.parametrize("pattern", ENDS)
def test_end_anchors_inside_have_re_search_semantics(pattern):
    _check(pattern, SHORT)


@pytest.mark.parametrize("pattern,where", [("a$b", "unsatisfiable"), ("a(^b)", "AT_BEGINNING"),
                                           ("(a$){70,}", "at least 70")])
def test_what_end_anchors_cannot_do_is_an_error(pattern, where):
    with pytest.raises(Exception, match=where):
        lower_json_schema({"type": "string", "pattern": pattern})


def test_an_end_anchor_inside_under_not_is_sound():
    import jsonschema

    schema = {"type": "string", "not": {"pattern": "a($|b)"}}
    rx = re.compile(grammar_to_regex(lower_json_schema(schema, whitespace="compact")), re.S)
    texts = [""] + ["".join(p) for n in range(1, 5) for p in itertools.product("ab\nc", repeat=n)]
    for text in texts:
        if rx.fullmatch(json.dumps(text)) is not None:
            jsonschema.validate(text, schema)  # Python's `$` also matches before a final newline


def _check(pattern: str, texts: list[str]) -> None:
    grammar = lower_json_schema({"type": "string", "pattern": pattern}, whitespace="compact")
    rx = re.compile(grammar_to_regex(grammar), re.S)
    for text in texts:
        accepted = rx.fullmatch(json.dumps(text, ensure_ascii=False)) is not None
        assert accepted == (re.search(pattern, text) is not None), (pattern, text)


NAMES = ["Red", "Blue", "Yellow", "Gold", "Silver", "Crystal", "Ruby", "Sapphire", "Emerald",
         "FireRed", "LeafGreen", "Diamond", "Pearl", "Platinum", "HeartGold", "SoulSilver", "Black",
         "White", "Black 2", "White 2", "X", "Y", "Omega Ruby", "Alpha Sapphire", "Sun", "Moon",
         "Ultra Sun", "Ultra Moon", "Let's Go Pikachu", "Let's Go Eevee"]


def test_a_long_unanchored_name_list_compiles_and_is_enforced():
    schema = {"type": "object", "patternProperties": {"|".join(NAMES): {"type": "integer"}},
              "additionalProperties": False}
    vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(32, 127)] + [None], eos_ids=[95])
    compiled = GrammarCompiler(vocab).compile_json_schema(schema, whitespace="compact")

    def accepts(text: str) -> bool:
        m = Matcher(compiled)
        return all(m.accept_token(b - 32) for b in text.encode()) and m.is_terminated() is False \
            and m.accept_token(95)

    assert accepts('{"my Ruby":1,"xMoonx":2}')
    assert not accepts('{"Rub":1}')
