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
500 cases: GC time inside mask steps 2.6 -> 0.2 s, the longest mask step 0.7 s ->
37 ms). Frozen objects are still freed by reference counting; cycles among them
(recursive IR rules, and whatever the application had alive) wait for the next
unfreeze + full pass, run inside a compile after 64 compiles, then after twice as many
each time up to every 1024 (so frozen garbage stays bounded; counted in compiles
because gc.get_freeze_count() walks the whole frozen list, ~50 ms on such a heap).
DEEPINFER_GC_FREEZE=0 turns it off (settle_young() only).

`widen_young()` (run with the first compile) raises the young generation's threshold from
Python's default 700 to YOUNG_THRESHOLD container allocations. Why: a mask step allocates
thousands of short- and medium-lived containers (parser states, Earley sets, memo entries); at
700 a young pass ran every few steps and promoted what was still alive into generation 1,
whose passes rescan it. MaskBench replay, one process, all 500 cases: at 700, 1,960 young + 97
middle passes, 1,353 of them inside mask steps (0.23-0.26 s there; 606-678 steps over 395 us had
one); at 50,000, 317 + 28 passes, 3 inside mask steps. Replays alternated on one CPU, 700 / 50,000
(two rounds): steps over 395 us 3,643 / 2,459 and 3,074 / 2,751. Garbage cycles wait a little longer
(at most that many new containers). An application that set its own thresholds (anything but
700) keeps them; DEEPINFER_GC_YOUNG=0 leaves the threshold alone, another number sets it.

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
import logging
import threading
import time

from ... import envs

_gc_lock = threading.Lock()
_gc_depth = 0
_frozen = False
_unfreeze_at_exit = False
FIRST_PASS_AFTER = 64        # compiles before the first unfreeze + full pass
MAX_COMPILES_BETWEEN_PASSES = 1024
_compiles_since_pass = 0
_compiles_between_passes = FIRST_PASS_AFTER
_last_pass_s = 0.0           # how long the last full pass took
PYTHON_DEFAULT_YOUNG = 700
YOUNG_THRESHOLD = 50_000
_widened = False


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


def widen_young() -> None:
    """Raise the young generation's threshold once per process (see the module docstring)."""
    global _widened
    with _gc_lock:
        if _widened:
            return
        _widened = True
    try:
        wanted = envs.GC_YOUNG.integer() if envs.GC_YOUNG.is_set() else YOUNG_THRESHOLD
    except ValueError as exc:
        logging.getLogger(__name__).warning("%s; using %d", exc, YOUNG_THRESHOLD)
        wanted = YOUNG_THRESHOLD
    young, middle, old = gc.get_threshold()
    if wanted > 0 and young == PYTHON_DEFAULT_YOUNG:
        gc.set_threshold(wanted, middle, old)


def freeze_survivors(time_left_s: float | None = None) -> None:
    """After a compile: freeze what is alive; now and then one full pass first (see
    the module docstring). Leaves the collector alone when the application turned it
    off, inside a paused build, or with DEEPINFER_GC_FREEZE=0.

    time_left_s: what is left of the compile's time limit (None: no limit). A pass due
    then waits for a later compile unless the last one took under half of that (a full
    pass over a big heap took 1.4 s, inside a compile limited to 0.3 s)."""
    global _compiles_since_pass, _compiles_between_passes, _last_pass_s
    widen_young()
    if not envs.GC_FREEZE.enabled():
        settle_young()
        return
    with _gc_lock:
        if _gc_depth or not gc.isenabled():
            return
        _compiles_since_pass += 1
        due = _compiles_since_pass >= _compiles_between_passes
        if due and (time_left_s is None or 2 * _last_pass_s < time_left_s):
            _compiles_since_pass = 0
            _compiles_between_passes = min(2 * _compiles_between_passes, MAX_COMPILES_BETWEEN_PASSES)
            started = time.perf_counter()
            gc.unfreeze()
            gc.collect()
            _last_pass_s = time.perf_counter() - started
        _freeze()


def freeze_abandoned() -> None:
    """Inside a paused build that is being abandoned (a compile stopped at its time limit):
    freeze what it allocated, as a finished compile's survivors are, so the first young pass
    after the pause does not scan that garbage (~0.25 s past the limit for a schema that
    lowered for 2 s); it is collected with the next unfreeze + full pass. A no-op with
    DEEPINFER_GC_FREEZE=0."""
    if envs.GC_FREEZE.enabled():
        _freeze()


def _freeze() -> None:
    global _unfreeze_at_exit
    if not _unfreeze_at_exit:
        # the interpreter's last collection at exit skips frozen objects: let it see them
        # (extension modules report what it never freed as leaks)
        _unfreeze_at_exit = True
        atexit.register(gc.unfreeze)
    gc.freeze()
