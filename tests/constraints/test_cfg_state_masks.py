"""The whole-mask memo of the context-free automaton (cfg/state_masks.py) and the
canonical item-set ids it keys on (cfg/earley.py ItemSet.sid)."""

from __future__ import annotations

import random
from array import array
from types import SimpleNamespace

import numpy as np
import pytest

from deepinfer.constraints import GrammarCompiler, Vocabulary
from deepinfer.constraints.cfg import earley
from deepinfer.constraints.cfg.scan.state_masks import recall, remember, state_key, state_masks
from deepinfer.constraints.regular.automaton import MaskCache

from cfg_test_helpers import cfg_compiled

NESTED = 'start: item ("," item)*\nitem: "[" item? "]" | "x"\n'
SCHEMA = {"type": "array", "items": {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}}}}


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [t.encode() for t in ['{"', '":', '", "', '},', '],', '[[', ']]', '12', ', ', '"a', 'a"', '[]']]
    tokens.append(None)
    return Vocabulary.from_token_bytes(tokens, eos_ids=[len(tokens) - 1])


def _key(automaton, state):
    return state_key(automaton.uid, state.chart, state.threads)


def _mask(automaton, state, words: int, memo: bool) -> np.ndarray:
    row = np.full(words, 7, dtype=np.int32)  # garbage: every path must overwrite all of it
    (automaton.fill_mask if memo else automaton._compute_mask)(state, row)
    return row


def test_equal_items_get_equal_ids_across_charts(vocab):
    automaton = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    start = automaton.initial_state()
    after_x = automaton.advance_bytes(start, b"[x]")
    after_brackets = automaton.advance_bytes(start, b"[[x]]")
    # Different charts (4 vs 6 sets), same parse state once origins are named by content:
    # the last "]" closes the outermost item either way.
    assert len(after_x.chart) != len(after_brackets.chart)
    assert _key(automaton, after_x) == _key(automaton, after_brackets) is not None
    # ...and a state with other items gets another key.
    assert _key(automaton, automaton.advance_bytes(start, b"[x")) != _key(automaton, after_x)
    words = vocab.words
    assert np.array_equal(_mask(automaton, after_x, words, False), _mask(automaton, after_brackets, words, False))


def test_keys_differ_between_automata_of_one_grammar(vocab):
    compiler = GrammarCompiler(vocab)
    a = cfg_compiled(compiler, NESTED).automaton
    b = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    assert a is not b
    assert _key(a, a.initial_state()) != _key(b, b.initial_state())


def _walk_compare(automaton, vocab, seed: int, steps: int) -> int:
    """Random walks (restarting when a sentence ends); at every step the memoized mask
    must equal a fresh computation. Returns the number of distinct masks seen."""
    rng, state, words, seen = random.Random(seed), automaton.initial_state(), vocab.words, set()
    for step in range(steps):
        fresh = _mask(automaton, state, words, memo=False)
        assert np.array_equal(_mask(automaton, state, words, memo=True), fresh), step
        assert np.array_equal(_mask(automaton, state, words, memo=True), fresh), step  # a hit
        seen.add(fresh.tobytes())
        allowed = [t for t in np.flatnonzero(np.unpackbits(fresh.view(np.uint8), bitorder="little"))
                   if t < vocab.size and t not in vocab.eos_ids]
        state = automaton.next_state(state, rng.choice(allowed)) if allowed else automaton.initial_state()
        assert state is not None
    return len(seen)


@pytest.mark.parametrize("seed", range(4))
def test_memoized_masks_equal_computed_ones(vocab, seed):
    compiled = GrammarCompiler(vocab).compile_json_schema(SCHEMA)
    assert _walk_compare(compiled.automaton, vocab, seed, 60) > 5


def test_interning_table_restart_keeps_masks_exact(vocab, monkeypatch):
    monkeypatch.setattr(earley, "MAX_INTERNED", 3)  # restarts every few sets
    automaton = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    for seed in range(3):
        _walk_compare(automaton, vocab, seed, 40)


def test_sets_without_an_id_are_not_memoized():
    interned, loose = SimpleNamespace(sid=4), SimpleNamespace(sid=-1)
    assert state_key(1, [interned, interned], [(0, 1, 5)]) == array("q", (1, 4, 0, 4, 5)).tobytes()
    assert state_key(1, [interned, interned], [(0, 1, -5)]) != state_key(1, [interned, interned], [(0, 1, 5)])
    assert state_key(1, [interned, loose], []) is None           # the last set
    assert state_key(1, [loose, interned], [(0, 0, 5)]) is None  # a thread's origin


@pytest.mark.parametrize("fill", [0, -1])
@pytest.mark.parametrize("others", [0, 1, 3, 24, 25, 40, 100])
def test_rows_round_trip_sparse_and_dense(fill, others):
    cache, words = MaskCache(1 << 20), 100
    row = np.full(words, fill, dtype=np.int32)
    row[np.random.default_rng(others).choice(words, others, replace=False)] = 5 + np.arange(others)
    remember(cache, ("k",), row)
    kept = cache.get(("k",))
    assert kept.nbytes <= row.nbytes and (others >= 25) == (kept.shape[0] == words)
    out = np.full(words, 9, dtype=np.int32)
    assert recall(cache, ("k",), out)
    assert np.array_equal(out, row)
    assert not recall(cache, ("other",), out)


def test_the_memo_is_per_vocabulary(vocab):
    other = Vocabulary.from_token_bytes([b"a", b"b", None], eos_ids=[2])
    assert state_masks(vocab) is state_masks(vocab)
    assert state_masks(vocab) is not state_masks(other)


def test_mask_cache_counts_bytes_exactly_under_concurrent_puts():
    import threading

    cache = MaskCache(max_bytes=40 * 400)  # room for 40 rows of 100 int32 words
    rows = [np.full(100, i, dtype=np.int32) for i in range(200)]

    def put_all(offset: int) -> None:
        for i in range(2000):
            k = (i * 7 + offset) % 200
            cache.put(("k", k), rows[k])
            cache.get(("k", (k * 3) % 200))

    workers = [threading.Thread(target=put_all, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert cache.bytes == sum(r.nbytes for r in cache.rows.values()) <= cache.max_bytes
    for (_, k), row in cache.rows.items():
        assert np.array_equal(row, rows[k])
    cache.put(("k", 0), rows[0])
    cache.put(("k", 0), rows[0])  # the same key again: counted once
    assert cache.bytes == sum(r.nbytes for r in cache.rows.values())


def test_a_token_ending_a_lexeme_leads_to_the_set_its_mask_explored(vocab):
    """automaton._after: the mask of `[x` explores `]` ending the "x" item (through the
    crossing token `]]`), and stepping by `]]` then lands on that very item set, with what
    the exploration remembered on it, not on an equal new one."""
    automaton = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    state = automaton.advance_bytes(automaton.initial_state(), b"[[x")
    _mask(automaton, state, vocab.words, memo=False)
    last = state.chart[len(state.chart) - 1]
    explored = [v[0] for k, v in last.memo.items() if isinstance(k[0], int)]
    assert explored
    after = automaton.next_state(state, vocab.token_bytes.index(b"]]"))
    assert after is not None
    assert after.chart[len(state.chart)] in explored  # identity (ItemSet compares by identity)
    # the same state as one reached byte by byte from scratch, with a fresh automaton
    other = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    again = other.advance_bytes(other.initial_state(), b"[[x]]")
    assert np.array_equal(_mask(automaton, after, vocab.words, False), _mask(other, again, vocab.words, False))


def test_lexemes_ending_together_share_one_remembered_set(vocab):
    """Two lexemes that end at the same byte (x and y both read "ab") complete together: the
    set after them is remembered on the chart, so a second step there reuses it, and the
    language is unchanged."""
    grammar = 'start: x start "!" | y start "?" | "."\nx: "a" "b"+\ny: "a" "b" "b"?\n'
    automaton = cfg_compiled(GrammarCompiler(vocab), grammar).automaton
    state = automaton.advance_bytes(automaton.initial_state(), b"a")
    first = automaton.advance_bytes(state, b"b")
    assert len(first.chart) == len(state.chart) + 1  # both lexemes ended at the "b"
    second = automaton.advance_bytes(state, b"b")
    assert first.chart[len(state.chart)] is second.chart[len(state.chart)]
    for text, ok in ((b"ab.!", True), (b"ab.?", True), (b"abb.?", True), (b"abbb.!", True),
                     (b"abab.?!", True), (b"abbb.?", False), (b"abb.!", True), (b"a.!", False)):
        end = automaton.advance_bytes(automaton.initial_state(), text)
        assert (end is not None and automaton.is_accepting(end)) == ok, text
    other = cfg_compiled(GrammarCompiler(vocab), grammar).automaton
    assert np.array_equal(_mask(automaton, first, vocab.words, False),
                          _mask(other, other.advance_bytes(other.initial_state(), b"ab"), vocab.words, False))


def _memo_reachable(automaton) -> int:
    """Item sets reachable from the automaton's initial set through memoized completions."""
    from deepinfer.constraints.cfg.earley import ItemSet

    first = automaton.initial_state().chart[0]
    seen, todo = {id(first)}, [first]
    while todo:
        for value in todo.pop().memo.values():
            if isinstance(value, tuple) and value and isinstance(value[0], ItemSet) and id(value[0]) not in seen:
                seen.add(id(value[0]))
                todo.append(value[0])
    return len(seen)


@pytest.mark.parametrize("limit, bounded", [(40, True), (1 << 30, False)])
def test_memoized_completions_do_not_pile_up_on_the_initial_set(vocab, monkeypatch, limit, bounded):
    """Sets memoized by masks and steps hang from the cached automaton's initial set; with
    epochs, what stays reachable from it does not grow with the number of walks served (the
    walk in progress and ~2 epochs of memos), without them every path served stays."""
    from deepinfer.constraints.cfg import automaton as automaton_mod

    monkeypatch.setattr(automaton_mod, "MAX_MEMOS", limit)
    automaton = cfg_compiled(GrammarCompiler(vocab), NESTED).automaton
    for seed in range(4):
        _walk_compare(automaton, vocab, seed, 80)
    few = _memo_reachable(automaton)
    for seed in range(4, 24):
        _walk_compare(automaton, vocab, seed, 80)
    many = _memo_reachable(automaton)
    assert (many < 2 * few) if bounded else (many > 3 * few), (few, many)
