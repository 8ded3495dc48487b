"""gcpause.freeze_once: the static heap is frozen once (after jsonschema's import) and the
collector stays on; gc_paused still restores it."""

import gc

from deepinfer.constraints.regular import gcpause


def test_freeze_once_freezes_and_keeps_collector_on(monkeypatch):
    assert gc.isenabled()
    gcpause.freeze_once()
    assert gcpause._frozen and gc.get_freeze_count() > 0
    # the second call must not freeze again; counting the permanent generation cannot tell
    # (frozen objects that die leave it, so the count may drop between calls)
    calls = []
    monkeypatch.setattr(gcpause.gc, "freeze", lambda: calls.append(1))
    gcpause.freeze_once()
    assert calls == []
    with gcpause.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


class _Node:
    """A weak-referenceable object that can sit in a reference cycle."""


def _compile_new(tag: int) -> None:
    from deepinfer.constraints import GrammarCompiler, Vocabulary

    vocab = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_ids=[3])
    GrammarCompiler(vocab).compile_regex(f"(ab){{{tag}}}")


def _tracked(objects: list) -> int:
    """How many of these objects the collector still tracks outside the frozen generation."""
    ids = {id(o) for o in objects}
    return sum(1 for o in gc.get_objects() if id(o) in ids)


def test_a_compile_freezes_what_is_alive(monkeypatch):
    monkeypatch.setattr(gcpause, "_compiles_between_passes", 10**9)  # no full pass here
    kept = [[] for _ in range(1000)]  # alive containers: frozen by the compile
    assert _tracked(kept) == len(kept)
    _compile_new(1)
    # frozen objects leave gc.get_objects(); the frozen count itself may also drop meanwhile
    assert _tracked(kept) == 0
    assert gc.isenabled()


def test_frozen_cycles_are_collected_by_the_next_pass(monkeypatch):
    import weakref

    monkeypatch.setattr(gcpause, "_compiles_between_passes", 10**9)
    node = _Node()
    node.self = node  # a cycle: only the collector frees it
    ref = weakref.ref(node)
    _compile_new(2)  # freezes the cycle
    del node
    gc.collect()
    assert ref() is not None  # frozen: full passes skip it
    monkeypatch.setattr(gcpause, "_compiles_between_passes", 2)
    monkeypatch.setattr(gcpause, "_compiles_since_pass", 1)  # the next compile is the 2nd
    _compile_new(3)
    assert ref() is None  # unfreeze + full pass inside that compile
    assert gc.get_freeze_count() > 0
    assert gcpause._compiles_since_pass == 0 and gcpause._compiles_between_passes == 4


def test_opt_out_and_collector_off_freeze_nothing(monkeypatch):
    monkeypatch.setattr(gcpause, "_compiles_between_passes", 10**9)
    monkeypatch.setenv("DEEPINFER_GC_FREEZE", "0")
    # frozen objects that die leave the permanent generation, so the count may drop; a freeze
    # of a compile's survivors would add thousands
    before = gc.get_freeze_count()
    _compile_new(4)
    assert gc.get_freeze_count() <= before
    monkeypatch.delenv("DEEPINFER_GC_FREEZE")
    gc.disable()
    try:
        _compile_new(5)
        assert gc.get_freeze_count() <= before and not gc.isenabled()
    finally:
        gc.enable()


_YOUNG_PROBE = """
import gc, sys
if sys.argv[1] != "default":
    gc.set_threshold(int(sys.argv[1]), 10, 10)
from deepinfer.constraints import GrammarCompiler, Vocabulary
vocab = Vocabulary.from_token_bytes([b"a", b"b", None], eos_ids=[2])
before = gc.get_threshold()[0]
GrammarCompiler(vocab).compile_regex("ab")
print(before, gc.get_threshold()[0])
"""


def _young_thresholds(app_threshold: str, env: dict) -> tuple[int, int]:
    import os
    import subprocess
    import sys

    run_env = {k: v for k, v in os.environ.items() if k != "DEEPINFER_GC_YOUNG"} | env
    out = subprocess.run([sys.executable, "-c", _YOUNG_PROBE, app_threshold], env=run_env,
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def test_first_compile_widens_the_young_generation_unless_told_otherwise():
    # a fresh process each: the threshold is process state
    assert _young_thresholds("default", {}) == (700, gcpause.YOUNG_THRESHOLD)
    assert _young_thresholds("default", {"DEEPINFER_GC_YOUNG": "12345"}) == (700, 12345)
    assert _young_thresholds("default", {"DEEPINFER_GC_YOUNG": "0"}) == (700, 700)
    assert _young_thresholds("2000", {}) == (2000, 2000)  # the application's own choice stays
