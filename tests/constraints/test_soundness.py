"""Soundness on real tokenizers (tiny byte-level BPE and DeepSeek-V4), as properties.

1. every string that fully matches a regex is accepted along its canonical
   tokenization, every token on the way is in the mask, and eos is then allowed;
2. random walks over allowed tokens that end in eos decode to strings that
   `re.fullmatch`, and every mask is consistent with accept_token;
3. rollback restores exactly the earlier masks.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepinfer.constraints import Matcher

PATTERNS = [
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4}",
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    r'"([^"\\\n]|\\["\\n])*"',
    r"(héllo|wörld|日本語|😀)( (héllo|wörld|日本語|😀))*",
    r"\(\d{3}\) \d{3}-\d{4}",
    r"[A-Za-z_][A-Za-z0-9_]{0,15}",
    r"(true|false|null|\[[ \t\n]*\])",
    r"[^\n]{0,12}\n",
]
SLOW_PATTERNS = [
    r"[\u00c0-\u00ff\u4e00-\u9fff\U0001f600-\U0001f64f]{1,6}",  # hypothesis is slow on all of Unicode
    r"(\+|-)?[0-9]{1,3}(,[0-9]{3})*(\.[0-9]{2})?",
    r"[A-Z][a-z]+( [a-z]+){2,6}\.",
    r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    r"[^a-z]{2,5}z",
]
VOCABS = ["tiny", "deepseek"]


@pytest.fixture()
def env(request):
    name = request.param
    compiler = request.getfixturevalue(f"{name}_compiler")
    tokenizer = request.getfixturevalue(f"{name}_tokenizer")
    return compiler, tokenizer


def reference(pattern: str) -> re.Pattern:
    # re.ASCII gives \d \w their ECMA meaning; hypothesis cannot draw non-ASCII under it
    return re.compile(pattern, re.ASCII if re.search(r"\\[dwDW]", pattern) else 0)


def mask_bits(m: Matcher) -> np.ndarray:
    row = np.zeros((1, m.compiled.vocab.words), dtype=np.int32)
    m.fill_next_token_bitmask(row, 0)
    return np.unpackbits(row[0].view(np.uint8), bitorder="little")


def strings_for(pattern):
    rx = reference(pattern)
    return st.from_regex(rx, fullmatch=True).filter(lambda s: "\\s" not in pattern or s.isascii())


@pytest.mark.parametrize("env", VOCABS, indirect=True)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_matching_strings_are_accepted_along_their_tokenization(env, data):
    compiler, tokenizer = env
    pattern = data.draw(st.sampled_from(PATTERNS))
    check_tokenization(compiler, tokenizer, pattern, data.draw(strings_for(pattern)))


@pytest.mark.slow
@pytest.mark.parametrize("env", VOCABS, indirect=True)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_matching_strings_are_accepted_many(env, data):
    compiler, tokenizer = env
    pattern = data.draw(st.sampled_from(PATTERNS + SLOW_PATTERNS))
    check_tokenization(compiler, tokenizer, pattern, data.draw(strings_for(pattern)))


def check_tokenization(compiler, tokenizer, pattern: str, text: str) -> None:
    m = Matcher(compiler.compile_regex(pattern))
    for tok in tokenizer.encode(text, add_special_tokens=False).ids:
        assert mask_bits(m)[tok] == 1, (pattern, text, tok)
        assert m.accept_token(tok), (pattern, text, tok)
    eos = min(compiler.vocab.eos_ids)
    assert m.is_completed() and mask_bits(m)[eos] == 1
    assert m.accept_token(eos) and m.is_terminated()


def distances_to_accept(dfa) -> list[int]:
    """Bytes still needed from each DFA state to reach acceptance (BFS backwards)."""
    n = dfa.num_states
    dist = [0 if a else -1 for a in dfa.accepting.tolist()]
    frontier = [s for s in range(n) if dist[s] == 0]
    preds: dict[int, set[int]] = {}
    for s in range(n):
        for t in set(dfa.trans[s].tolist()) - {-1}:
            preds.setdefault(t, set()).add(s)
    while frontier:
        nxt = []
        for t in frontier:
            for s in preds.get(t, ()):
                if dist[s] < 0:
                    dist[s] = dist[t] + 1
                    nxt.append(s)
        frontier = nxt
    return dist


def random_walk(m: Matcher, rng: random.Random, max_tokens: int = 40):
    """Walk over allowed tokens, heading for acceptance in the second half;
    returns (token ids, masks seen), ending in eos if it got there."""
    vocab = m.compiled.vocab
    automaton = m.compiled.automaton
    dist = distances_to_accept(automaton.dfa)
    ids, masks = [], []
    for step in range(max_tokens):
        bits = mask_bits(m)
        masks.append(bits)
        allowed = np.flatnonzero(bits)
        assert allowed.size, "a live state must allow some token"
        eos_ok = [i for i in allowed if i in vocab.eos_ids]
        if eos_ok and (rng.random() < 0.25 or step > max_tokens // 3):
            tok = eos_ok[0]
        elif step > max_tokens // 3:  # greedy progress towards acceptance
            sample = [int(t) for t in rng.sample(list(allowed), min(300, allowed.size))
                      if t not in vocab.eos_ids]
            tok = min(sample, key=lambda t: dist[automaton.next_state(m.state, t)])
        else:
            tok = int(rng.choice(allowed))
        # consistency: a disallowed token is refused without a state change
        bad = rng.randrange(vocab.size)
        if not bits[bad]:
            assert not m.accept_token(bad)
        assert m.accept_token(tok)
        ids.append(tok)
        if m.is_terminated():
            break
    return ids, masks


@pytest.mark.parametrize("env", VOCABS, indirect=True)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_random_walks_decode_to_matches_and_rollback_restores(env, pattern):
    compiler, _ = env
    rx = reference(pattern)
    compiled = compiler.compile_regex(pattern)
    rng = random.Random(hash(pattern) & 0xFFFF)
    finished = 0
    for _ in range(8):
        m = Matcher(compiled)
        ids, masks = random_walk(m, rng)
        if m.is_terminated():
            finished += 1
            text = compiler.vocab.decode(ids).decode("utf-8")  # raises if not valid UTF-8
            assert rx.fullmatch(text), (pattern, text, ids)
        k = rng.randrange(1, len(ids) + 1)
        m.rollback(k)
        assert (mask_bits(m) == masks[len(ids) - k]).all()
        assert m.num_accepted == len(ids) - k
    assert finished > 0
