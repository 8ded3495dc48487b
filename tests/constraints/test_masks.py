"""Token-mask computation: the vectorized walk (with and without the loop
shortcut) equals a plain per-token byte walk; bit packing is exact."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import Vocabulary
from deepinfer.constraints.regular.mask_bits import pack_mask
from deepinfer.constraints.regular.masks import loop_bits, state_mask, walk_tokens

PATTERNS = [
    r'"([^"\\]|\\.)*"',
    r"[^\n]*x",
    r"[a-z]+( [a-z]+)*\.",
    r"(é|日本|[α-ω])+ ?",
    r"[\u0100-\U0010ffff]+a",
    r"[0-9a-f]{4}-[0-9]{1,3}",
    r"(ab|cd)*[^a]",
    r'"[^"\\]{0,5}"',          # counting chains (bounded repetition)
    r"[a-z ]{2,8}x",
    r"[^\n]{3}(é|[0-9]{1,4})",
]


def brute_force(dfa, state, vocab):
    out = {}
    for tok, data in enumerate(vocab.token_bytes):
        if not data:
            continue
        s = state
        for byte in data:
            s = int(dfa.trans[s, byte])
            if s < 0:
                break
        else:
            out[tok] = s
    return out


@pytest.mark.parametrize("name", ["tiny", "deepseek"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_walk_equals_brute_force(request, name, pattern):
    compiler = request.getfixturevalue(f"{name}_compiler")
    vocab = compiler.vocab
    dfa = compiler.compile_regex(pattern).automaton.dfa
    loops = loop_bits(dfa.trans)
    states = range(dfa.num_states) if name == "tiny" else range(min(3, dfa.num_states))
    for state in states:
        expected = brute_force(dfa, state, vocab) if name == "tiny" else None
        results = []
        for lp in (None, loops):
            ids, ends = walk_tokens(dfa.trans, state, vocab, lp)
            assert len(set(ids.tolist())) == len(ids)
            results.append(dict(zip(ids.tolist(), ends.tolist())))
        assert results[0] == results[1], (pattern, state)
        row = state_mask(dfa.trans, state, vocab, loops)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")
        assert set(np.flatnonzero(bits).tolist()) == set(results[0]), (pattern, state)
        if expected is not None:
            assert results[0] == expected, (pattern, state)


def test_loop_bits_of_any_text_state():
    vocab = Vocabulary.from_token_bytes([b"a"])
    from deepinfer.constraints import GrammarCompiler

    dfa = GrammarCompiler(vocab).compile_regex(r'[^"]*"').automaton.dfa
    bits = loop_bits(dfa.trans).bits[0]
    ascii_loop = [(int(bits[b >> 6]) >> (b & 63)) & 1 for b in range(128)]
    assert ascii_loop == [int(b != ord('"')) for b in range(128)]
    assert int(bits[2]) == 0b111  # every 2-, 3- and 4-byte character loops


@pytest.mark.parametrize("ids", [[], [0], [31, 32, 999], [5, 5, 5, 31, 31], list(range(0, 1000, 3)),
                                 list(range(1000))])
def test_pack_mask_exact(ids):
    vocab = Vocabulary.from_token_bytes([b"a"] * 1000)
    row = pack_mask(np.array(ids, dtype=np.int32), vocab)
    assert row.dtype == np.int32 and row.shape == (32,)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    assert set(np.flatnonzero(bits).tolist()) == set(ids)


@pytest.mark.parametrize("fraction", [0.001, 0.05, 0.5, 0.95])
def test_ranges_mask_path_equals_index_math(deepseek_vocab, fraction):
    """_ranges expands a per-key mask above RANGES_BY_MASK positions: same positions."""
    from deepinfer.constraints.regular import masks
    keys = np.flatnonzero(np.random.default_rng(7).random(256 * 257) < fraction)
    got = masks._ranges(keys, deepseek_vocab)
    want = np.concatenate([np.arange(deepseek_vocab.pair_start[k], deepseek_vocab.pair_start[k + 1])
                           for k in keys.tolist()] + [np.zeros(0, np.int64)])
    np.testing.assert_array_equal(got, want)
