"""The compiled subset construction and Moore refinement (native_subset.py) give the Python
construction's DFA exactly: same table, acceptance and digest after trimming, minimizing and
canonical numbering; the same limits fail with the same error."""

from __future__ import annotations

import numpy as np
import pytest

from deepinfer.constraints import ConstraintError
from deepinfer.constraints.regular import dfa, native_subset
from deepinfer.constraints.regular.nfa import build_nfa
from deepinfer.constraints.frontends.regex import parse_regex

pytestmark = pytest.mark.skipif(native_subset._library() is None, reason="no C compiler here")

PATTERNS = [
    r'"([^"\\]|\\.){0,40}"', r"[a-z]+@[a-z]+\.(com|org)", r"(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}",
    r'"(foo|bar|baz|qux)"', r".{0,120}x", r"[\u4e00-\u9fff]{2,5}", r"(a|b)*abb(a|b){3}", r" {0,100}",
    r"a{70}", r"(x|xy|xyz)*(yz|z)?", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", r"[^\x00-\x1f]*é",
]


def _dfa(pattern, limits=None):
    return dfa.determinize(build_nfa(parse_regex(pattern)), limits or dfa.Limits())


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_dfa_as_the_python_construction(pattern, monkeypatch):
    native = _dfa(pattern)
    monkeypatch.setattr(native_subset, "_lib", [None])
    plain = _dfa(pattern)
    assert np.array_equal(native.trans, plain.trans)
    assert np.array_equal(native.accepting, plain.accepting)
    assert native.digest == plain.digest


def test_moore_partition_is_the_coarsest_stable_one():
    from deepinfer.constraints.regular.minimize import _moore, _exact_round

    rng = np.random.default_rng(3)
    for _ in range(20):
        states, classes = int(rng.integers(2, 40)), int(rng.integers(1, 6))
        table = rng.integers(-1, states, size=(states, classes)).astype(np.int32)
        accepting = rng.random(states) < 0.4
        got = native_subset.moore_partition(table, accepting, 64)
        want = _moore(table, accepting, _exact_round)
        # the same partition, whatever the block numbers
        assert len({(a, b) for a, b in zip(got.tolist(), want.tolist())}) == len(set(want.tolist()))
        assert len(set(got.tolist())) == len(set(want.tolist()))


def test_limits_fail_closed_like_the_python_construction():
    with pytest.raises(ConstraintError, match="exceeds 50 DFA states"):
        _dfa(r"[ab]*a[ab]{8}", dfa.Limits(max_dfa_states=50))


def test_trim_and_canonical_order_match_their_python_versions(monkeypatch):
    from deepinfer.constraints.regular import minimize as dfa_minimize

    rng = np.random.default_rng(11)
    cases = []
    for _ in range(30):
        states, classes = int(rng.integers(1, 30)), int(rng.integers(1, 5))
        table = rng.integers(-1, states, size=(states, classes)).astype(np.int32)
        accepting = rng.random(states) < 0.3
        accepting[0] |= rng.random() < 0.2
        cases.append((table, accepting))

    def run():
        out = []
        for table, accepting in cases:
            try:
                t, a = dfa_minimize.trim(table, accepting)
            except ConstraintError:
                out.append(None)
                continue
            out.append((t.tolist(), a.tolist(), *(x.tolist() for x in dfa_minimize.canonical_order(t, a))))
        return out

    native = run()
    monkeypatch.setattr(native_subset, "_lib", [None])
    assert native == run()
    assert any(x is None for x in native) and any(x is not None for x in native)
