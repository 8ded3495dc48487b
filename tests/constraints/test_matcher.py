"""Matcher and bitmask helpers: API behaviour on a small hand-made vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deepinfer.constraints import (ConstraintError, GrammarCompiler, Matcher, Vocabulary,
                                   allocate_token_bitmask, apply_token_bitmask_inplace,
                                   fill_next_token_bitmask)
from deepinfer.constraints import ir
from deepinfer.errors import UserError

TOKENS = [b"a", b"b", b"ab", b"1", b"12", b"-", None, b"", b"\xc3", b"\xa9", "é".encode(), b"ba"]
EOS = 6


@pytest.fixture()
def compiler():
    return GrammarCompiler(Vocabulary.from_token_bytes(TOKENS, eos_ids=[EOS], vocab_size=40))


def allowed(m: Matcher) -> list[int]:
    return m.allowed_token_ids().tolist()


def test_walk_eos_and_termination(compiler):
    m = Matcher(compiler.compile_regex(r"a+b?-\d{1,2}"))
    assert allowed(m) == [0, 2]
    assert not m.accept_token(1) and m.num_accepted == 0  # not allowed: state unchanged
    assert m.accept_token(2) and allowed(m) == [5]
    assert m.find_jump_forward_string() == "-"
    assert m.accept_token(5) and allowed(m) == [3, 4] and not m.is_completed()
    assert not m.accept_token(EOS)
    assert m.accept_token(4) and allowed(m) == [EOS] and m.is_completed()
    assert m.accept_token(EOS) and m.is_terminated()
    assert not m.accept_token(0) and allowed(m) == [EOS]
    m.rollback(2)
    assert allowed(m) == [3, 4] and not m.is_terminated()
    m.reset()
    assert allowed(m) == [0, 2]


def test_per_token_path_never_raises(compiler):
    m = Matcher(compiler.compile_regex(r"ab"))
    for bad in (-1, 7, 39, 40, 10**9):
        assert m.accept_token(bad) is False
    with pytest.raises(ValueError):
        m.rollback(1)


def test_split_utf8_character(compiler):
    m = Matcher(compiler.compile_regex(r"(é|b)+"))
    assert allowed(m) == [1, 8, 10]
    assert m.accept_token(8) and allowed(m) == [9]
    assert m.find_jump_forward_string() == ""  # only half a character is forced
    assert m.accept_token(9) and m.is_completed()


def test_jump_forward_stops_at_choices_and_acceptance(compiler):
    m = Matcher(compiler.compile_regex(r"abc(d|e)"))
    assert m.find_jump_forward_string() == "abc"
    m2 = Matcher(compiler.compile_regex(r"é-x"))
    assert m2.find_jump_forward_string() == "é-x"
    m3 = Matcher(compiler.compile_regex(r"ab|ab-c"))
    assert m3.find_jump_forward_string() == "ab"


def test_accept_string_and_rollback(compiler):
    m = Matcher(compiler.compile_regex(r"[a-z]+-[0-9]+"))
    assert m.accept_string("ab-") and not m.accept_string("x")
    assert m.accept_string("1") and m.is_completed()
    m.rollback(1)
    assert not m.is_completed() and m.num_accepted == 1


def test_bitmask_numpy_and_torch_rows(compiler):
    m = Matcher(compiler.compile_regex(r"b+a?"))
    np_mask = np.full((2, 3), -1, dtype=np.int32)  # wider than the 2 words needed
    m.fill_next_token_bitmask(np_mask, 1)
    assert np_mask[0].tolist() == [-1, -1, -1]
    assert np_mask[1].tolist() == [(1 << 1) | (1 << 11), 0, 0]
    t_mask = allocate_token_bitmask(3, 40)
    assert t_mask.shape == (3, 2) and t_mask.dtype == torch.int32 and (t_mask == -1).all()
    fill_next_token_bitmask(m, t_mask, 2)
    assert t_mask[2].tolist() == [(1 << 1) | (1 << 11), 0]
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, 1), dtype=np.int32), 0)


def test_apply_bitmask_inplace():
    mask = torch.zeros(2, 2, dtype=torch.int32)
    mask[0, 0] = 1 << 3
    mask[0, 1] = -(1 << 31)  # bit 31 of word 1 -> token 63
    mask[1] = -1
    logits = torch.zeros(2, 70)
    apply_token_bitmask_inplace(logits, mask)
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == [3, 63]
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == list(range(64))
    narrow = torch.zeros(2, 10)
    apply_token_bitmask_inplace(narrow, mask)
    assert torch.isfinite(narrow[0]).nonzero().flatten().tolist() == [3]
    some = torch.zeros(2, 64)
    apply_token_bitmask_inplace(some, mask, indices=[0])
    assert torch.isfinite(some[0]).sum() == 2 and torch.isfinite(some[1]).all()
    one = torch.zeros(64)
    apply_token_bitmask_inplace(one, mask[0])
    assert torch.isfinite(one).nonzero().flatten().tolist() == [3, 63]


def test_compile_cache_and_errors(compiler):
    a = compiler.compile_regex(r"[0-9]+")
    assert compiler.compile_regex(r"[0-9]+") is a
    assert a.kind == "regex" and str(a.grammar) == "start ::= [0-9]+" and a.annotations == []
    with pytest.raises(ConstraintError) as info:
        compiler.compile_regex(r"(a)\1")
    assert isinstance(info.value, UserError)


def test_compile_ir_inlines_rules_and_rejects_recursion(compiler):
    g = ir.Grammar({"start": ir.seq(ir.RuleRef("x"), ir.Literal("-"), ir.RuleRef("x")),
                    "x": ir.repeat(ir.CharClass.of([(ord("a"), ord("b"))]), 1)})
    m = Matcher(compiler.compile_ir(g))
    assert m.accept_string("ab-ba") and m.is_completed()
    rec = ir.Grammar({"start": ir.alt(ir.Literal("a"), ir.seq(ir.Literal("("), ir.RuleRef("start"),
                                                                 ir.Literal(")")))})
    try:
        import deepinfer.constraints.cfg  # noqa: F401  (the context-free back end, issue 5)
    except ModuleNotFoundError:
        with pytest.raises(ConstraintError, match="context-free back end"):
            compiler.compile_ir(rec)
    undefined = ir.Grammar({"start": ir.RuleRef("nope")})
    with pytest.raises(ConstraintError, match="undefined rule 'nope'"):
        compiler.compile_ir(undefined)


def test_masks_shared_across_compiles(compiler):
    c1 = compiler.compile_regex(r"x(ab|ba)*")
    c2 = GrammarCompiler(compiler.vocab).compile_regex(r"x(?:ab|ba)*")
    assert c1 is not c2 and c1.automaton.dfa.digest == c2.automaton.dfa.digest
    row = c1.automaton.mask_row(1)
    assert c2.automaton.mask_row(1) is row


def test_precompute_masks_fills_every_state(compiler):
    compiled = compiler.compile_regex(r"[ab]{3}-[0-9]")
    automaton = compiled.automaton
    assert automaton.precompute_masks(budget_s=0.0) <= 1
    compiled.precompute_masks(budget_s=10.0)
    assert automaton.precompute_masks(budget_s=0.0) == automaton.dfa.num_states


def test_scalar_token_ids_from_numpy_and_torch(compiler):
    m = Matcher(compiler.compile_regex(r"ab"))
    assert m.accept_token(np.int64(2)) and m.accept_token(torch.tensor(EOS)) and m.is_terminated()


def test_reused_bitmask_rows_are_written_where_asked(compiler):
    # the matcher keeps the numpy view of the tensor it filled last: a different tensor, another
    # row of the same one, or the same tensor after its memory moved must each get fresh writes
    m = Matcher(compiler.compile_regex("ab"))
    expected = torch.zeros(1, compiler.vocab.words, dtype=torch.int32)
    m.fill_next_token_bitmask(expected, 0)
    a = torch.zeros(2, compiler.vocab.words, dtype=torch.int32)
    m.fill_next_token_bitmask(a, 0)
    m.fill_next_token_bitmask(a, 1)
    assert torch.equal(a[0], expected[0]) and torch.equal(a[1], expected[0])
    b = torch.zeros(2, compiler.vocab.words, dtype=torch.int32)
    m.fill_next_token_bitmask(b, 1)
    assert torch.equal(b[1], expected[0]) and not b[0].any()
    a.zero_()
    a.set_(torch.zeros(2, compiler.vocab.words, dtype=torch.int32))  # same object, new memory
    m.fill_next_token_bitmask(a, 1)
    assert torch.equal(a[1], expected[0])
