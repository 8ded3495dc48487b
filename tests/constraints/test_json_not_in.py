"""not_in(words): every string except the words, exactly (brute force over a small alphabet),
and its automaton stays small for many names (the shared leave class)."""

import itertools

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints.frontends.json.scalars import not_in
from deepinfer.constraints.frontends.json.text import encode_expr
from deepinfer.constraints.regular.nfa import build_nfa


def _accepts(dfa, text: str) -> bool:
    q = 0
    for b in text.encode():
        q = dfa.trans[q, b]
        if q < 0:
            return False
    return bool(dfa.accepting[q])


def test_not_in_is_exact():
    words = ["name", "names", "age", "a", "", "x/y", 'q"\\']
    dfa = dfa_ops.expr_dfa(not_in(words))
    alphabet = ["n", "a", "m", "e", "s", "g", "x", "/", "y", "q", '"', "\\", "z", "é", "\n"]
    for k in range(5):
        for chars in itertools.product(alphabet, repeat=k):
            text = "".join(chars)
            assert _accepts(dfa, text) == (text not in words), text


def test_not_in_without_unused_characters():
    dfa = dfa_ops.expr_dfa(not_in(["ab"]))
    assert _accepts(dfa, "a") and _accepts(dfa, "abc") and _accepts(dfa, "é")
    assert not _accepts(dfa, "ab")


def test_key_trie_automaton_is_linear_in_the_names():
    names = [f"property_number_{i}_{c}" for i in range(40) for c in "xy"]
    size = len(build_nfa(encode_expr(not_in(names))).eps)
    trie_nodes = len({n[:k] for n in names for k in range(len(n) + 1)})
    assert size < 20 * trie_nodes  # a complemented class per node made ~50


def test_plain_literal_fast_path_matches_per_character_encoding():
    from deepinfer.constraints import ir
    from deepinfer.constraints.regular.json_strings import _PLAIN_TEXT, encode_codepoints

    for cp in list(range(0x3000)) + list(range(0xD700, 0xE100)) + [0xFFFD, 0x10000, 0x10FFFF]:
        single = ir.CharClass(((cp, cp),))
        fast = _PLAIN_TEXT.fullmatch(chr(cp)) is not None
        assert fast == (encode_codepoints(single) == single), hex(cp)
    assert encode_expr(ir.Literal("name_1")) == ir.Literal("name_1")
    assert encode_expr(ir.Literal("a/b")) != ir.Literal("a/b")  # "/" may also be written "\/"
