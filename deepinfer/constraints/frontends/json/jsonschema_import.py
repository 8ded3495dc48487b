"""jsonschema, imported on first use, and the lowering's clock, which leaves that import out.

Importing jsonschema costs ~1.2 s of CPU once per process (its `uri` format checker builds a
lark parser at import time), more than lowering almost any schema, and most schemas never
need it. So it is imported only where a verdict needs it (`load`: verdict.py for concrete
`enum`/`const` values and names, drafts.py for the draft a `$schema` names), and the time
that took is kept per thread, so that the lowering's CPU budget (`lowering_clock`) and its
reported wall time (`import_wall_s`) are the lowering's alone. After the import, the heap it
brought (~150k objects) is frozen out of later full GC passes (gcpause.freeze_once). Knows
nothing about schemas.
"""

from __future__ import annotations

import threading
import time

from deepinfer.constraints import deadline as compile_deadline
from deepinfer.constraints.regular.dfa import budget_clock
from deepinfer.constraints.regular.gcpause import freeze_once

_lock = threading.Lock()
_loaded: list = []            # [the jsonschema module] once imported
_spent = threading.local()    # cpu_s, wall_s: this thread's time importing it
_threads: list = []           # [the import thread], once a time-limited compile started one
_thread_lock = threading.Lock()


def load():
    """The jsonschema module, its format checkers loaded (imported here on first use).

    Inside a compile with a time limit (deadline.py) the import runs in a thread of its own,
    waited on only for the time the compile has left: an import cannot be interrupted, and
    this one alone (~1.4 s) can be longer than the limit. Past the limit the compile stops
    and the import goes on, for the next compile."""
    if not _loaded:
        limit = compile_deadline.active()
        left = None if limit is None else limit.left()
        if left is None:
            _import()
        else:
            wall = time.perf_counter()
            _importer().join(left)
            _spent.wall_s = import_wall_s() + time.perf_counter() - wall
            if not _loaded:
                limit.where = limit.where or "/"
                limit.stage = "importing jsonschema (for a verdict on a value)"
                limit.tripped = "time"
                limit.check()
    return _loaded[0]


def _import() -> None:
    with _lock:
        if not _loaded:
            cpu, wall = budget_clock(), time.perf_counter()
            import jsonschema

            jsonschema.Draft202012Validator.FORMAT_CHECKER  # noqa: B018 - part of the one-time cost
            freeze_once()
            _spent.cpu_s = _cpu_spent() + budget_clock() - cpu
            _spent.wall_s = import_wall_s() + time.perf_counter() - wall
            _loaded.append(jsonschema)


def _importer() -> threading.Thread:
    """The one thread importing jsonschema for time-limited compiles (started once)."""
    with _thread_lock:
        if not _threads:
            thread = threading.Thread(target=_import, name="jsonschema-import", daemon=True)
            thread.start()
            _threads.append(thread)
        return _threads[0]


def lowering_clock() -> float:
    """This thread's CPU seconds (dfa.budget_clock) less those it spent importing jsonschema."""
    return budget_clock() - _cpu_spent()


def import_wall_s() -> float:
    """Wall seconds this thread has spent importing jsonschema (0 if it never did)."""
    return getattr(_spent, "wall_s", 0.0)


def _cpu_spent() -> float:
    return getattr(_spent, "cpu_s", 0.0)
