"""Pausing the cyclic garbage collector around bulk automaton construction.

Why: a compile (or a lazily built lexeme DFA) allocates hundreds of thousands
of small containers (IR nodes, NFA edges, subset-construction tables, Earley
tables); each young-generation pass rescans the survivors, and the full passes
they trigger rescan every cache in the process (0.3-1 s each on a big heap,
landing inside whichever compile or mask step allocates at that moment).
Refcounting still frees the garbage, which is acyclic; the collector resumes
(and sees each survivor once) when the last concurrent build ends. Leaves the
collector alone if the application had disabled it.

`settle_young()` runs one young-generation pass right after a compile that left
more than a gen-0 threshold of new containers, so that pass is part of the compile
instead of landing in the next mask steps.

`freeze_survivors()` runs after every compile: everything alive then (the compiled
IR and automaton: ~1M containers once a cache holds a few hundred big schemas) goes to
the permanent generation, so full passes stop rescanning it (measured on MaskBench's
500 cases: GC time inside mask steps 6.0 -> 1.5 s, the longest mask step 0.9 s ->
40-60 ms). Frozen objects are still freed by reference counting; cycles among them
(recursive IR rules, and whatever the application had alive) wait until the frozen
count has doubled since the last such pass: then one unfreeze + full collection, inside
that compile, so memory held by frozen garbage stays bounded and full passes run
O(log heap) times. DEEPINFER_GC_FREEZE=0 turns it off (settle_young() only).

`freeze_once()` moves everything alive into the collector's permanent
generation, once per process, after the big one-time imports (jsonschema's
format checkers bring ~150k lark objects): full collections otherwise rescan
them every time (~0.4 s each, landing inside compiles and mask steps).
Knows nothing else.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import threading

_gc_lock = threading.Lock()
_gc_depth = 0
_frozen = False
_unfreeze_at_exit = False
_frozen_after_pass = 0  # freeze count right after the last unfreeze + full collection
MIN_FROZEN_BEFORE_PASS = 200_000  # no full pass while less than this is frozen


@contextlib.contextmanager
def gc_paused():
    """Context manager: no cyclic collection inside (re-entrant, thread safe)."""
    global _gc_depth
    with _gc_lock:
        if _gc_depth == 0 and not gc.isenabled():
            owner = False
        else:
            owner = True
            _gc_depth += 1
            gc.disable()
    try:
        yield
    finally:
        if owner:
            with _gc_lock:
                _gc_depth -= 1
                if _gc_depth == 0:
                    gc.enable()


def settle_young() -> None:
    """After a bulk build: one young-generation pass now, when the build left more than a
    gen-0 threshold of new containers, so the passes that would otherwise examine them
    (and promote them twice) do not land inside the next mask steps."""
    if _gc_depth == 0 and gc.isenabled() and gc.get_count()[0] > gc.get_threshold()[0]:
        gc.collect(1)


def freeze_once() -> None:
    """Collect once (so no garbage cycle is frozen), then freeze the surviving heap.

    Frozen objects are still freed by reference counting; only cycles among objects
    alive now would never be collected, a one-time bounded cost."""
    global _frozen
    with _gc_lock:
        if _frozen:
            return
        _frozen = True
    if gc.isenabled() or _gc_depth:  # not if the application turned the collector off
        gc.collect()
        _freeze()


def freeze_survivors() -> None:
    """After a compile: freeze what is alive; one full pass when the frozen heap has
    doubled since the last (see the module docstring). Leaves the collector alone when
    the application turned it off, inside a paused build, or with DEEPINFER_GC_FREEZE=0."""
    global _frozen_after_pass
    if os.environ.get("DEEPINFER_GC_FREEZE", "1") == "0":
        settle_young()
        return
    with _gc_lock:
        if _gc_depth or not gc.isenabled():
            return
        _freeze()
        if gc.get_freeze_count() > max(2 * _frozen_after_pass, MIN_FROZEN_BEFORE_PASS):
            gc.unfreeze()
            gc.collect()
            _freeze()
            _frozen_after_pass = gc.get_freeze_count()


def _freeze() -> None:
    global _unfreeze_at_exit
    if not _unfreeze_at_exit:
        # the interpreter's last collection at exit skips frozen objects: let it see them
        # (extension modules report what it never freed as leaks)
        _unfreeze_at_exit = True
        atexit.register(gc.unfreeze)
    gc.freeze()
