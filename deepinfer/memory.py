"""Giving back what a failed build held: the locals its exception's frames keep, and the C
allocator's free pages.

Why (measured on the server, a refused 7,000-property JSON Schema, ~2.2 GB of lowering state):
- a raised exception keeps every frame it passed through alive, locals included, so it holds
  the whole failed build; the worker that caught it closes a cycle (its frame -> the exception
  -> the traceback -> that frame) that only a full GC pass frees, and the next compile's
  `gc.freeze()` (constraints/regular/gcpause.py) moved it out of the collector's reach: resident
  memory grew 2.4 -> 4.4 -> 6.6 GB over three refusals, never returned while idle;
- freed, those pages stay with glibc, in the arena of the thread that built them; the next
  compile runs on another thread (another arena) and does not reuse them. `malloc_trim(0)`
  returns every arena's free pages to the OS (a no-op where the C library has none).

`forget_frames(exc)` clears the locals of every finished frame of an exception's traceback (and
of its cause and context); the traceback still prints (files, lines, functions). `give_back()`
then runs a full GC pass (the failed build's cycles, wherever it promoted them; the compiled,
frozen heap is not rescanned, so the pass costs what the unfrozen heap holds) and trims. Knows
nothing else.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import traceback


def forget_frames(exc: BaseException | None) -> None:
    """Drop the locals an exception's frames hold (frames still running are left alone)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        if exc.__cause__ is not None and id(exc.__cause__) not in seen:
            forget_frames(exc.__cause__)
        exc = exc.__context__


def give_back() -> None:
    """After a big build was dropped: free its garbage cycles and return free pages to the OS."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim") if name else None
    except (OSError, AttributeError):  # not glibc (macOS, musl without it): nothing to trim
        return None
