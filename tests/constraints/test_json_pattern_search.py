"""Top-level alternations in `pattern`: unanchored branches share one `.*(a|b).*` (the same
language as `.*a.*|.*b.*`, without the DFA that remembers which words it saw). Differential
against re.search, and a 30-name unanchored patternProperties key compiles."""

import json
import re

import pytest

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary
from deepinfer.constraints.frontends.json_regex import grammar_to_regex
from deepinfer.constraints.frontends.json_schema import lower_json_schema

PATTERNS = ["ab|cd", "ab|^cd", "ab|cd$", "a|b*", "x(y|z)|w", "(ab)|(cd)|e", "^$|ab|b",
            "ab|c(d|e)$", "a.c|[0-9]{2}|^z$", "(?:ab|cd)|ef"]
TEXTS = ["", "a", "b", "ab", "cd", "xabx", "xcd", "cdx", "ecd", "ex", "xe", "xy", "xz", "w", "zz",
         "12", "a1c", "z", "zz1", "abcd", "ef", "e\n"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_alternations_have_re_search_semantics(pattern):
    grammar = lower_json_schema({"type": "string", "pattern": pattern}, whitespace="compact")
    rx = re.compile(grammar_to_regex(grammar), re.S)
    for text in TEXTS:
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
