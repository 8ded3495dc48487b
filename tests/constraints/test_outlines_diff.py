r"""Differential test against outlines-core on the same regexes and vocabulary,
at every state visited by random walks.

outlines-core allows its (single) eos id in final states, as we do; its regex
dialect (Rust regex) agrees with ours on the ASCII-explicit patterns used here
(its `\d` is Unicode, so we write [0-9]).

Finding: outlines-core 0.2.14 misses tokens that pass through an accepting
state and continue (after "1" in `[0-9]+(\.[0-9]+)?` it forbids "."; from the
start of `[^\n]{0,3}x` it forbids "xt"); see test_outlines_core_misses_...
below. So the check is: every token outlines-core allows, we allow (same
state), and every token only we allow is confirmed by an independent oracle,
the `regex` module's partial matching (the text so far plus the token is a
prefix of some full match).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import regex

from deepinfer.constraints import Matcher

oc = pytest.importorskip("outlines_core")

PATTERNS = [
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4}",
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    r'"([^"\\\n]|\\["\\n])*"',
    r"(héllo|wörld|日本語|😀)( (héllo|wörld|日本語|😀))*",
    r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
    r"[A-Za-z_][A-Za-z0-9_]{0,15}",
    r"(true|false|null)",
    r"[^\n]{0,12}x",
]

_OUTLINES_VOCABS: dict[int, object] = {}


def outlines_vocab(vocab):
    key = id(vocab)
    if key not in _OUTLINES_VOCABS:
        (eos,) = vocab.eos_ids
        table: dict[bytes, list[int]] = {}
        for i, data in enumerate(vocab.token_bytes):
            if data:
                table.setdefault(data, []).append(i)
        _OUTLINES_VOCABS[key] = oc.Vocabulary(eos, table)
    return _OUTLINES_VOCABS[key]


def is_valid_prefix(pattern: str, data: bytes) -> bool:
    """Oracle: some full match starts with `data` (an incomplete trailing UTF-8
    character is checked by completing it with each possible continuation byte)."""
    try:
        return regex.fullmatch(pattern, data.decode("utf-8"), partial=True) is not None
    except UnicodeDecodeError:
        pass
    for cont in range(0x80, 0xC0):
        if is_valid_prefix(pattern, data + bytes([cont])):
            return True
    return False


def test_outlines_core_misses_continuations_through_final_states():
    vocab = oc.Vocabulary(9, {b"1": [0], b".": [2], b"x": [4], b"xt": [5]})
    float_index = oc.Index(r"[0-9]+(\.[0-9]+)?", vocab)
    after_one = float_index.get_next_state(float_index.get_initial_state(), 0)
    assert 2 not in float_index.get_allowed_tokens(after_one)  # "1." is a valid prefix
    x_index = oc.Index(r"[^\n]{0,3}x", vocab)
    assert 5 not in x_index.get_allowed_tokens(x_index.get_initial_state())  # "xt" -> "xtx"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_allowed_tokens_as_outlines_core(deepseek_compiler, pattern):
    vocab = deepseek_compiler.vocab
    index = oc.Index(pattern, outlines_vocab(vocab))
    compiled = deepseek_compiler.compile_regex(pattern)
    rng = random.Random(1234)
    visited = 0
    for _ in range(6):
        m = Matcher(compiled)
        state = index.get_initial_state()
        history: list[int] = []
        for _ in range(12):
            ours = set(m.allowed_token_ids().tolist())
            theirs = set(index.get_allowed_tokens(state))
            assert theirs <= ours, (pattern, sorted(theirs - ours)[:10])
            only_ours = sorted(ours - theirs)
            for tok in rng.sample(only_ours, min(40, len(only_ours))):
                assert is_valid_prefix(pattern, vocab.decode(history + [tok])), (pattern, tok)
            visited += 1
            # walk on tokens both allow, so both automata stay comparable
            text_tokens = sorted(t for t in theirs if t not in vocab.eos_ids)
            if not text_tokens:
                break
            tok = rng.choice(text_tokens)
            assert m.accept_token(tok)
            state = index.get_next_state(state, tok)
            history.append(tok)
    assert visited >= 6
