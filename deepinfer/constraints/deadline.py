"""A compile's wall-clock time limit and state budget, checked cooperatively by its loops.

Owns `Deadline` (what one compile may spend: wall seconds and automaton states, and where
it had got to), the thread's active one (`active`, `scope`), the cheap `check(where)` the
compiler's long loops call every few iterations, and `DeadlineExceeded`, what a check raises.
GrammarCompiler opens a scope around each compile when its Limits set `compile_time_s` or
`max_compile_states`, and turns a `DeadlineExceeded` into the ConstraintError the caller sees,
naming the limit, the JSON pointer the lowering had reached and the option that raises it.

Why cooperative, thread-local checks: a compile runs in a caller's thread (a server's compile
pool, a library user's), which cannot be stopped from outside; every loop that can run long
(the JSON Schema walk, subset construction, the context-free back end's splitting, lexeme
DFAs) checks the thread's deadline, so the compile stops itself within a few milliseconds of
the limit. Native loops get the time left as an argument and check the wall clock themselves.
Knows nothing about grammars, automata or tokens.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from .errors import ConstraintError, Reason

clock = time.perf_counter  # wall clock: a caller's time limit is wall time
UNWIND_MARGIN = 0.05       # share of the limit kept for unwinding a stopped compile ...
UNWIND_MARGIN_MAX_S = 0.05  # ... at most this many seconds


class DeadlineExceeded(BaseException):
    """A compile's Deadline has passed. A BaseException so that no fallback on the way
    (`except ConstraintError` / `except Exception`: "too large, match nothing", "no caps")
    swallows it and caches a degraded result; GrammarCompiler converts it (`Deadline.error`)."""

    def __init__(self, deadline: "Deadline") -> None:
        super().__init__(deadline.describe())
        self.deadline = deadline


@dataclass
class Deadline:
    """What one compile may spend. limit_s: wall seconds from `started` (None: no limit);
    max_states: automaton states built in all (None: no limit); option: how a caller raises
    them, named in the error."""

    limit_s: float | None = None
    max_states: int | None = None
    option: str = "Limits(compile_time_s=..., max_compile_states=...)"
    kind: str = "constraint"
    started: float = field(default_factory=clock)
    where: str = ""         # the JSON pointer the lowering reached last ("" before any)
    stage: str = "lowering"  # what the compile was doing
    states: int = 0         # automaton states built so far
    tripped: str = ""       # "time" or "states" once exceeded: every later check raises again

    def __post_init__(self) -> None:
        # checks trip UNWIND_MARGIN early: unwinding a big compile frees its IR (tens of ms)
        margin = None if self.limit_s is None else min(UNWIND_MARGIN * self.limit_s, UNWIND_MARGIN_MAX_S)
        self.end = None if self.limit_s is None else self.started + self.limit_s - margin

    def left(self) -> float | None:
        """Wall seconds left (None: no time limit)."""
        return None if self.end is None else max(0.0, self.end - clock())

    def check(self) -> None:
        if self.tripped or (self.end is not None and clock() > self.end):
            self.tripped = self.tripped or "time"
            raise DeadlineExceeded(self)

    def add_states(self, count: int) -> None:
        """Count `count` more automaton states against max_states (then check the time)."""
        self.states += count
        if self.max_states is not None and self.states > self.max_states:
            self.tripped = self.tripped or "states"
        self.check()

    def describe(self) -> str:
        spent = clock() - self.started
        if self.tripped == "states":
            what = f"its state limit of {self.max_states} automaton states ({self.states} built)"
        else:
            what = f"its time limit of {self.limit_s:g} s ({spent:.3f} s spent)"
        reached = f" at {self.where}" if self.where else ""
        return (f"{self.kind} compile stopped at {what}{reached}, while {self.stage}; "
                f"raise it with {self.option}")

    def error(self) -> ConstraintError:
        return ConstraintError(self.describe(), Reason.LIMIT)


_local = threading.local()


def active() -> Deadline | None:
    """The calling thread's compile deadline, if a compile with limits is running in it."""
    return getattr(_local, "deadline", None)


def check(where: str | None = None) -> None:
    """Raise DeadlineExceeded if this thread's compile is past its limits; `where` records
    the JSON pointer reached. A no-op (one attribute lookup) outside a limited compile."""
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        if where is not None:
            deadline.where = where or "/"
        deadline.check()


def set_stage(stage: str) -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.stage = stage
        deadline.check()


def add_states(count: int) -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.add_states(count)


def wall_left() -> float:
    """Wall seconds this thread's compile has left, 0.0 for none set (native loops' argument)."""
    deadline = getattr(_local, "deadline", None)
    left = None if deadline is None else deadline.left()
    return 0.0 if left is None else max(left, 1e-6)


@contextmanager
def scope(deadline: Deadline | None):
    """Make `deadline` this thread's active one (None: leave things as they are)."""
    if deadline is None:
        yield None
        return
    outer = active()
    _local.deadline = deadline
    try:
        yield deadline
    finally:
        _local.deadline = outer
