"""The context-free back end's speed-ups change no mask: shared tails and chain
shortcuts in root scans (vs a plain walk), digests, keys and packed rows of the
run cache. (Lexemes themselves: test_cfg_lexemes.py.) On the real DeepSeek-V4 vocabulary, where the
tail thresholds are reached. These are the numpy walks (no compiled kernel), so the
compiled trie walks are switched off here; test_native_walks.py compares the two."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints.cfg.scan.chain_runs import chain_split
from deepinfer.constraints.cfg.scan.ref_runs import reference_state
from deepinfer.constraints.cfg.scan.cache import ROOT, ScanCache

from scan_test_patterns import FOLLOWS, LITERALS, PATTERNS, TRIE, follow_sets, lexeme_of, run_entries


@pytest.fixture(autouse=True)
def numpy_walks(monkeypatch):
    from deepinfer.constraints.cfg.scan import cache as scan

    monkeypatch.setattr(scan.TokenTrie, "of", staticmethod(lambda scans: None))


@pytest.mark.parametrize("pattern", PATTERNS + [TRIE] + LITERALS)
def test_root_runs_equal_plain_walks(deepseek_vocab, monkeypatch, pattern):
    lex = lexeme_of(pattern)
    follows = follow_sets()
    fast = ScanCache(deepseek_vocab)
    from deepinfer.constraints.cfg.scan import cache as scan, walks as scan_walks

    splits, refs = [], []
    monkeypatch.setattr(scan, "chain_split", lambda *a: splits.append(chain_split(*a)) or splits[-1])
    monkeypatch.setattr(scan, "reference_state", lambda *a: refs.append(reference_state(*a)) or refs[-1])
    got = {(q, i): run_entries(fast, fast.run(lex.digest, lex.trans, lex.accepting, q, ROOT,
                                           fast.follow_id(follow)))
           for i, follow in enumerate(follows)
           for q in range(len(lex.trans)) if (lex.trans[q] >= 0).any()}
    assert any(s is not None for s in splits) or pattern not in PATTERNS[-5:], "should use chains"
    assert pattern != TRIE or any(key[1] == 2 for key in fast.tails), "should use two-byte tails"
    assert pattern != TRIE or any(r is not None for r in refs), "trie nodes should use the loop state's run"
    assert pattern not in LITERALS or scan.literal_prefix(fast, lex.trans, lex.accepting, lex.start, 16)

    monkeypatch.setattr(scan, "root_walk", lambda scans, key, trans, accepting, state, follow, keys,
                        inside, hit_idx, hit_off: ScanCache._walk_uniform(
                            scans, trans.reshape(-1), accepting, follow, scan._ranges(keys, scans.vocab), 0,
                            state, inside, hit_idx, hit_off))
    monkeypatch.setattr(scan, "chain_split", lambda *args: None)
    monkeypatch.setattr(scan, "reference_state", lambda *args: None)
    monkeypatch.setattr(scan, "FEW_TOKENS", 0)  # vectorized to the last byte (few_walks.py off)
    monkeypatch.setattr(scan_walks, "FEW_TOKENS", 0)
    monkeypatch.setattr(scan, "literal_prefix", lambda *args: None)
    monkeypatch.setattr(ScanCache, "_loop_shortcut", lambda self, t, a, s, f, keys: (None, None))
    # no loop-signature shortcut inside walks either: every byte read
    monkeypatch.setattr(ScanCache, "_loops", lambda self, t, a, f: (np.zeros((t.shape[0], 2), np.uint64),
                                                                  np.zeros(t.shape[0], dtype=bool)))
    slow = ScanCache(deepseek_vocab)
    for (q, i), entries in got.items():
        fid = slow.follow_id(follows[i])
        want = run_entries(slow, slow.run(lex.digest, lex.trans, lex.accepting, q, ROOT, fid))
        assert entries == want, (pattern, q, FOLLOWS[i])
    assert fast.tails or any(refs) or not pattern.startswith('"(['), "the trie pattern should use tails"


def _reference_digest(trans, accepting, state):
    """The digest's definition: breadth-first renumbering, targets in byte order."""
    import hashlib
    order, seen, i = [state], {state}, 0
    while i < len(order):
        for t in trans[order[i]].tolist():
            if t >= 0 and t not in seen:
                seen.add(t)
                order.append(t)
        i += 1
    renum = np.full(trans.shape[0] + 1, -1, dtype=np.int32)
    renum[np.array(order)] = np.arange(len(order), dtype=np.int32)
    data = renum[trans[order]].tobytes() + accepting[order].tobytes()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@pytest.mark.parametrize("seed", range(4))
def test_sub_dfa_digest_matches_definition_and_ignores_numbering(seed):
    from deepinfer.constraints.cfg.scan.cache import sub_dfa_digest
    rng = np.random.default_rng(seed)
    n = 60
    trans = np.repeat(rng.integers(-1, n, size=(n, 16)), 16, axis=1).astype(np.int32)  # runs
    trans[rng.random((n, 256)) < 0.05] = -1
    accepting = rng.random(n) < 0.3
    perm = rng.permutation(n)  # the same DFA renumbered: old state q is perm[q]
    renamed = np.full_like(trans, -1)
    renamed[perm] = np.where(trans >= 0, perm[trans], -1)
    acc2 = np.zeros_like(accepting)
    acc2[perm] = accepting
    for q in range(0, n, 7):
        assert sub_dfa_digest(trans, accepting, q) == _reference_digest(trans, accepting, q)
        assert sub_dfa_digest(renamed, acc2, int(perm[q])) == sub_dfa_digest(trans, accepting, q)


def test_pack_positions_equals_pack_mask(deepseek_vocab):
    """Root runs pack their positions through an id -> position table: same row as packing ids."""
    from deepinfer.constraints.regular.mask_bits import pack_mask
    scans = ScanCache(deepseek_vocab)
    n = len(deepseek_vocab.sorted_ids)
    rng = np.random.default_rng(3)
    for sizes in ([5], [3000, 40], [60000, 60000, 10]):  # pieces may overlap
        pieces = [rng.choice(n, k, replace=False) for k in sizes]
        want = pack_mask(deepseek_vocab.sorted_ids[np.concatenate(pieces)], deepseek_vocab)
        np.testing.assert_array_equal(scans._pack_positions(pieces), want)


def test_key_trie_runs_equal_runs_without_the_loop_state(deepseek_compiler, deepseek_vocab, monkeypatch):
    """Every state of a real "any other key" lexeme (JSON Schema lowering): root runs through
    the loop state's run (ref_runs.py) equal root runs computed without it."""
    from deepinfer.constraints.cfg.scan import cache as scan
    from deepinfer.constraints.cfg.composed import split_parts

    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in
                                               ["path", "pattern", "name", "nam\u00e9", "k\"q", "年"]}}
    automaton = deepseek_compiler.compile_json_schema(schema).automaton
    tries = [lx for lx in getattr(automaton, "lexemes", []) if split_parts(lx.expr) is not None]
    lex = max(tries, key=lambda lx: len(lx.trans))  # the key trie (the others: `,` ws `"name":` ws)
    follow = np.zeros(256, dtype=bool)
    follow[[ord(c) for c in ' "{[0-9tfn']] = True
    fast, used, paired = ScanCache(deepseek_vocab), [], []
    monkeypatch.setattr(scan, "reference_state", lambda *a: used.append(reference_state(*a)) or used[-1])
    real_pairs = scan.reference_pairs
    monkeypatch.setattr(scan, "reference_pairs", lambda *a: paired.append(
        (len(a[6]), real_pairs(*a))) or paired[-1][1])
    states = [q for q in range(len(lex.trans)) if (lex.trans[q] >= 0).any()]
    got = {q: run_entries(fast, fast.run(lex.digest, lex.trans, lex.accepting, q, ROOT, fast.follow_id(follow)))
           for q in states}
    assert sum(r is not None for r in used) >= 5
    assert any(len(left) < n for n, left in paired), "trie nodes should serve pairs from G's tail"
    monkeypatch.setattr(scan, "reference_state", lambda *args: None)
    slow = ScanCache(deepseek_vocab)
    for q in states:
        want = run_entries(slow, slow.run(lex.digest, lex.trans, lex.accepting, q, ROOT, slow.follow_id(follow)))
        assert got[q] == want, q


@pytest.mark.parametrize("seed", range(4))
def test_small_sub_dfa_key_names_the_sub_dfa(seed):
    """Equal small sub-DFA keys exactly for equal renumbered sub-DFAs (across two tables, any
    numbering); None above the state limit."""
    from deepinfer.constraints.cfg.scan.tables import compact_rows, small_sub_dfa_key
    rng = np.random.default_rng(seed)
    n = 40
    # a chain of small tails (state q reads into states > q, so sub-DFAs vary in size)
    trans = np.full((n, 256), -1, dtype=np.int32)
    for q in range(n - 1):
        for lo in range(0, 256, 32):
            if rng.random() < 0.4:
                trans[q, lo:lo + 32] = rng.integers(q + 1, min(n, q + 4))
    trans[n - 1, :] = -1
    accepting = rng.random(n) < 0.5
    accepting[n - 1] = True
    perm = rng.permutation(n)
    renamed = np.full_like(trans, -1)
    renamed[perm] = np.where(trans >= 0, perm[trans], -1)
    acc2 = np.zeros_like(accepting)
    acc2[perm] = accepting
    one, two = compact_rows(trans, accepting), compact_rows(renamed, acc2)
    for p in range(n):
        mine = small_sub_dfa_key(one, accepting, p, n)
        assert small_sub_dfa_key(two, acc2, int(perm[p]), n) == mine
        for q in range(n):
            same = _reference_digest(trans, accepting, p) == _reference_digest(renamed, acc2, int(perm[q]))
            assert (small_sub_dfa_key(two, acc2, int(perm[q]), n) == mine) == same, (p, q)
    reach = len({int(t) for t in trans[0][trans[0] >= 0]})
    assert small_sub_dfa_key(one, accepting, 0, 1) is None or reach == 0


@pytest.mark.parametrize("seed", range(3))
def test_compact_rows_lists_each_rows_runs(seed):
    """compact_rows against its definition, row by row: a run starts at byte 0 and
    wherever the target changes (a row's runs never merge with the previous row's)."""
    from deepinfer.constraints.cfg.scan.tables import compact_rows
    rng = np.random.default_rng(seed)
    n = 30
    trans = np.repeat(rng.integers(-1, 3, size=(n, 32)), 8, axis=1).astype(np.int32)
    trans[1] = trans[0, -1]  # a constant row equal to the end of the previous one
    accepting = rng.random(n) < 0.5
    bounds, values, cols, accept = compact_rows(trans, accepting)
    assert accept == tuple(accepting.tolist()) and bounds[0] == 0 and len(bounds) == n + 1
    for q in range(n):
        row = trans[q].tolist()
        starts = [b for b in range(256) if b == 0 or row[b] != row[b - 1]]
        assert cols[bounds[q]:bounds[q + 1]] == tuple(starts)
        assert values[bounds[q]:bounds[q + 1]] == tuple(row[b] for b in starts)


def test_runs_are_shared_by_language_across_lexemes(deepseek_vocab, monkeypatch):
    """Two key lexemes with the same `": ?value` rest: the rest's states share their
    runs (one computation), and every run equals the run computed for that state alone."""
    lexemes = [lexeme_of(r'"ab": ?(-?[0-9]+|"[^"]{0,3}")'), lexeme_of(r'"xyz": ?(-?[0-9]+|"[^"]{0,3}")')]
    follow = np.zeros(256, dtype=bool)
    follow[[ord(c) for c in ',} ']] = True
    fast = ScanCache(deepseek_vocab)
    runs = [{q: fast.run(lx.digest, lx.trans, lx.accepting, q, ROOT, fast.follow_id(follow))
             for q in range(len(lx.trans)) if (lx.trans[q] >= 0).any()} for lx in lexemes]
    shared = {id(r) for r in runs[0].values()} & {id(r) for r in runs[1].values()}
    assert len(shared) >= 4  # the rest after the key: `:` ` ` then the value's states
    monkeypatch.setattr(ScanCache, "run_key", lambda self, digest, trans, accepting, state: (digest, state))
    slow = ScanCache(deepseek_vocab)
    for lx, got in zip(lexemes, runs):
        for q, run in got.items():
            want = slow.run(lx.digest, lx.trans, lx.accepting, q, ROOT, slow.follow_id(follow))
            assert run_entries(fast, run) == run_entries(slow, want), q


def test_scope_literal_index_equals_column_walk(deepseek_vocab):
    """Child scopes answer "which entries are a prefix of this literal, does one read past
    it" through an index of remaining bytes: the same as comparing columns."""
    from deepinfer.constraints.cfg.scan.literal_runs import _scope_prefixes, _scope_prefixes_walk

    scans = ScanCache(deepseek_vocab)
    follow = np.ones(256, dtype=bool)
    scopes = set()
    for pattern in [r'\{ ?', r'(, ?)|\[', r'[0-9]+', r'"[a-z]*"', r'true|false']:
        lex = lexeme_of(pattern)
        for q in range(len(lex.trans)):
            run = scans.run(lex.digest, lex.trans, lex.accepting, q, ROOT, scans.follow_id(follow))
            if run.child is not None:
                scopes.add(run.child)
    assert len(scopes) >= 4
    literals = [b'"name":', b'"', b'" ', b'"na', b'"nam\xc3\xa9":', b'1', b'12', b'}', b'"a"', b'e,',
                b'\n  "x"']
    checked = 0
    for scope_id in sorted(scopes):
        for literal in literals:
            (ids, on), (want_ids, want_on) = (_scope_prefixes(scans, scope_id, literal),
                                              _scope_prefixes_walk(scans, scope_id, literal))
            assert set(ids.tolist()) == set(want_ids.tolist()) and on == want_on, (scope_id, literal)
            checked += bool(want_ids.size) + want_on
    assert checked >= 5  # the literals do hit entries both ways


def test_small_child_scopes_walked_in_python_equal_vectorized(deepseek_vocab, monkeypatch):
    """Child scopes of up to FEW_TOKENS entries are read byte by byte (few_walks.walk_scope):
    the same inside tokens and crossings as the vectorized walk, from every state."""
    from deepinfer.constraints.cfg.scan import cache as scan, walks as scan_walks

    follow = np.zeros(256, dtype=bool)
    follow[[ord(c) for c in ',} ]":0123456789tfn']] = True
    lexemes = [lexeme_of(p) for p in [r'\{ ?', r'(, ?)|\[', r'-?(0|[1-9][0-9]*)(\.[0-9]+)?', r'"[a-z]*"',
                                    r'true|false', r'"ab": ?']]
    scans = ScanCache(deepseek_vocab)
    fid = scans.follow_id(follow)
    scopes = set()
    for lex in lexemes:
        for q in range(len(lex.trans)):
            run = scans.run(lex.digest, lex.trans, lex.accepting, q, ROOT, fid)
            if run.child is not None and len(scans.scopes[run.child].positions) <= scan.FEW_TOKENS:
                scopes.add(run.child)
    assert len(scopes) >= 3

    def child_runs(cache):
        out = {}
        for lex in lexemes:
            for q in range(len(lex.trans)):
                for scope_id in sorted(scopes):
                    run = cache._compute(lex.trans, lex.accepting, q, scope_id, follow, (lex.digest, fid))
                    out[(lex.digest, q, scope_id)] = run_entries(cache, run)
        return out

    fast = child_runs(scans)
    monkeypatch.setattr(scan, "FEW_TOKENS", 0)  # vectorized to the last byte
    monkeypatch.setattr(scan_walks, "FEW_TOKENS", 0)
    assert child_runs(scans) == fast
    assert any(inside or child for inside, child in fast.values())


def test_keys_from_some_first_bytes_equal_the_full_table():
    """A key-trie node lists the prefix keys of its few non-shared first bytes directly:
    the same keys, in the same order, as the full table filtered to those bytes."""
    from deepinfer.constraints.cfg.scan.cache import _keys_from, _live_keys
    rng = np.random.default_rng(1)
    for _ in range(100):
        n = int(rng.integers(2, 30))
        trans = rng.integers(-1, n, (n, 256)).astype(np.int32)
        trans[rng.random((n, 256)) < 0.7] = -1
        accepting, follow = rng.random(n) < 0.4, rng.random(256) < 0.3
        q, same = int(rng.integers(n)), rng.random(256) < 0.5
        live = _live_keys(trans, accepting, q, follow)
        want = np.zeros(0, np.int64) if live is None else np.flatnonzero(live)
        want = want[~same.take(want // 257)]
        got = _keys_from(trans, accepting, q, follow, np.flatnonzero((trans[q] >= 0) & ~same))
        assert np.array_equal(got, want)


def test_equal_child_scopes_share_one_id(deepseek_vocab):
    """Runs from two counts of a bounded string far from its bound cross into the same
    entries (the tokens that close the string): one child scope id, so what is keyed on it
    is reused; a run with other crossings gets another id; entries are those of a fresh cache."""
    lexeme = lexeme_of(r'"[^"\\]{0,200}",?')
    follow = np.zeros(256, dtype=bool)
    follow[ord(",")] = True
    scans = ScanCache(deepseek_vocab)
    fid = scans.follow_id(follow)
    states = []
    q = lexeme.start
    for byte in b'"ab':
        q = int(lexeme.trans[q, byte])
        states.append(q)
    runs = [scans.run(lexeme.digest, lexeme.trans, lexeme.accepting, q, ROOT, fid) for q in states[1:]]
    assert runs[0].child is not None and runs[0].child == runs[1].child
    other = lexeme_of(r'"[^"\\]{0,200}"x?')
    ofid = scans.follow_id(np.arange(256) == ord("}"))
    q = int(other.trans[other.start, ord('"')])
    elsewhere = scans.run(other.digest, other.trans, other.accepting, q, ROOT, ofid)
    assert elsewhere.child is not None and elsewhere.child != runs[0].child
    for q, run in zip(states[1:], runs):
        fresh = ScanCache(deepseek_vocab)
        alone = fresh.run(lexeme.digest, lexeme.trans, lexeme.accepting, q, ROOT, fresh.follow_id(follow))
        assert run_entries(fresh, alone) == run_entries(scans, run)
