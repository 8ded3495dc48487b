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

from deepinfer.constraints.regular.dfa import budget_clock
from deepinfer.constraints.regular.gcpause import freeze_once

_lock = threading.Lock()
_loaded: list = []            # [the jsonschema module] once imported
_spent = threading.local()    # cpu_s, wall_s: this thread's time importing it


def load():
    """The jsonschema module, its format checkers loaded (imported here on first use)."""
    if not _loaded:
        with _lock:
            if not _loaded:
                cpu, wall = budget_clock(), time.perf_counter()
                import jsonschema

                jsonschema.Draft202012Validator.FORMAT_CHECKER  # noqa: B018 - part of the one-time cost
                freeze_once()
                _spent.cpu_s = _cpu_spent() + budget_clock() - cpu
                _spent.wall_s = import_wall_s() + time.perf_counter() - wall
                _loaded.append(jsonschema)
    return _loaded[0]


def lowering_clock() -> float:
    """This thread's CPU seconds (dfa.budget_clock) less those it spent importing jsonschema."""
    return budget_clock() - _cpu_spent()


def import_wall_s() -> float:
    """Wall seconds this thread has spent importing jsonschema (0 if it never did)."""
    return getattr(_spent, "wall_s", 0.0)


def _cpu_spent() -> float:
    return getattr(_spent, "cpu_s", 0.0)
