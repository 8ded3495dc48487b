"""lexeme_cache is a segmented LRU: a lexeme asked for again survives a flood of big one-off
lexemes; a cached lexeme is the same object (same tables) as the one first built."""

from types import SimpleNamespace

import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.scan import lexeme_cache


@pytest.fixture(autouse=True)
def _fresh_cache():
    lexeme_cache.clear()
    yield
    lexeme_cache.clear()


def _lex(size: int):
    return SimpleNamespace(size_hint=size)


def test_shared_lexeme_survives_one_off_flood():
    shared = ("shared",)
    lexeme_cache.put(shared, _lex(50), False)
    assert lexeme_cache.get(shared) is not None  # second grammar: protected now
    for i in range(100):  # far more than MAX_STATES of one-off pieces
        lexeme_cache.put(("big", i), _lex(lexeme_cache.MAX_STATES // 20), False)
    assert lexeme_cache.get(shared) is not None
    assert lexeme_cache.get(("big", 0)) is None  # the oldest one-off went first
    assert sum(lexeme_cache._states) <= lexeme_cache.MAX_STATES


def test_protected_side_is_bounded():
    for i in range(50):
        key = ("hot", i)
        lexeme_cache.put(key, _lex(lexeme_cache.MAX_STATES // 10), False)
        lexeme_cache.get(key)
    assert lexeme_cache._states[1] <= lexeme_cache.MAX_STATES * lexeme_cache.PROTECTED_SHARE + \
        lexeme_cache.MAX_STATES // 10
    assert sum(lexeme_cache._states) <= lexeme_cache.MAX_STATES


def test_split_grammars_share_the_cached_lexeme():
    from deepinfer.constraints.cfg.lexemes import split_grammar

    body = ir.seq(ir.literal("{"), ir.repeat(ir.CharClass.of([(32, 32)]), 0, 3))
    grammars = [ir.Grammar({"start": ir.alt(ir.seq(body, ir.RuleRef("start"), ir.literal("}")),
                                                  ir.literal(str(i)))}, "start")
                for i in range(2)]
    first, second = (split_grammar(g) for g in grammars)
    a = next(lex for lex in first.lexemes if lex.expr == body)
    b = next(lex for lex in second.lexemes if lex.expr == body)
    assert a is b
    assert a.digest == b.digest
