"""IR construction fast paths give exactly what the general rules give.

ir.seq/ir.alt have two-item shortcuts, nodes carry their referenced rule names
(ir.rule_refs), and not_in builds classes without CharClass.of: each is
checked here against a plain reference implementation on random expressions.
"""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from deepinfer.constraints import ir
from deepinfer.constraints.regular import not_in

LEAVES = [ir.EMPTY, ir.NOTHING, ir.Literal("a"), ir.Literal("bc"), ir.Literal(""),
          ir.CharClass(((48, 57),)), ir.RuleRef("x"), ir.RuleRef("y")]


def _ref_seq(*items):
    """The general rule: flatten sequences, NOTHING absorbs, adjacent literals merge."""
    flat = []
    for item in items:
        if isinstance(item, ir.Seq):
            flat.extend(item.items)
        elif isinstance(item, ir.Alt) and not item.items:
            return ir.NOTHING
        else:
            flat.append(item)
    merged = []
    for item in flat:
        if isinstance(item, ir.Literal) and merged and isinstance(merged[-1], ir.Literal):
            merged[-1] = ir.Literal(merged[-1].text + item.text)
        else:
            merged.append(item)
    return merged[0] if len(merged) == 1 else ir.Seq(tuple(merged))


def _ref_alt(*items):
    flat = {}
    for item in items:
        if isinstance(item, ir.Alt):
            flat.update(dict.fromkeys(item.items))
        else:
            flat[item] = None
    return next(iter(flat)) if len(flat) == 1 else ir.Alt(tuple(flat))


def _walk_refs(expr):
    return frozenset(n.name for n in ir.walk(expr) if isinstance(n, ir.RuleRef))


def _random_expr(rng, depth):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(LEAVES)
    kind = rng.randrange(4)
    if kind == 0:
        return ir.seq(*(_random_expr(rng, depth - 1) for _ in range(rng.randint(1, 3))))
    if kind == 1:
        return ir.alt(*(_random_expr(rng, depth - 1) for _ in range(rng.randint(1, 3))))
    if kind == 2:
        return ir.repeat(_random_expr(rng, depth - 1), rng.randint(0, 2), rng.choice([None, 2, 3]))
    return ir.Seq(tuple(_random_expr(rng, depth - 1) for _ in range(rng.randint(0, 3))))  # unsimplified


def test_two_item_seq_and_alt_match_the_general_rules():
    rng = random.Random(0)
    for _ in range(3000):
        items = [_random_expr(rng, 3) for _ in range(rng.randint(1, 3))]
        got, want = ir.seq(*items), _ref_seq(*items)
        assert got == want and type(got) is type(want), (items, got, want)
        got, want = ir.alt(*items), _ref_alt(*items)
        assert got == want and type(got) is type(want), (items, got, want)


def test_rule_refs_match_a_walk():
    rng = random.Random(1)
    for _ in range(2000):
        e = _random_expr(rng, 4)
        assert ir.rule_refs(e) == _walk_refs(e)
    g = ir.Grammar({"start": ir.seq(ir.RuleRef("a"), ir.Literal("x")), "a": ir.Literal("y")})
    refs = g.referenced_rules("start")
    refs.add("mutated")  # callers get a fresh set
    assert g.referenced_rules("start") == {"a"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=5), max_size=6),
       st.sets(st.characters(max_codepoint=0x1F700), max_size=4))
def test_trie_other_classes_match_charclass_of(words, children):
    trie = not_in._TrieComplement(tuple(words), lambda e: e)
    used = {ch for w in words for ch in w}
    want = ir.CharClass.of([(ord(c), ord(c)) for c in used if c not in children])
    got = ir.CharClass(not_in._ranges(trie.used_cps, {ord(c) for c in children}))
    assert got == want


def test_plain_class_encoding_shortcut_matches_the_full_encoding():
    from deepinfer.constraints.regular import json_strings

    full = json_strings.encode_codepoints.__wrapped__
    rng = random.Random(2)
    points = [0, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x2E, 0x2F, 0x30, 0x5B, 0x5C, 0x5D, 0xD7FF, 0xE000, 0x10FFFF]
    shortcut_taken = 0
    for _ in range(3000):
        ranges = []
        for _ in range(rng.randint(1, 4)):
            lo = rng.choice(points + [rng.randrange(0x110000)])
            ranges.append((lo, min(0x10FFFF, lo + rng.choice([0, 1, 5, 100, rng.randrange(0x110000)]))))
        cls = ir.CharClass.of(ranges)
        if cls.is_empty():
            continue
        shortcut_taken += json_strings._plain_only(cls.ranges)
        saved = json_strings._plain_only
        json_strings._plain_only = lambda r: False
        try:
            want = full(cls)
        finally:
            json_strings._plain_only = saved
        assert full(cls) == want, ranges
    assert shortcut_taken > 100
