"""A compile's wall-clock time limit, state budget and memory limit, checked cooperatively by its loops.

Owns `Deadline` (what one compile may spend: wall seconds, automaton states and resident bytes,
and where it had got to), the thread's active one (`active`, `scope`), the cheap `check(where)`
the compiler's long loops call every few iterations, `DeadlineExceeded`, what a check raises,
and `resident_bytes`, the process's resident memory the byte limit samples. GrammarCompiler
opens a scope around each compile when its Limits set `compile_time_s`, `max_compile_states`
or `max_compile_bytes`, and turns a `DeadlineExceeded` into the ConstraintError the caller
sees, naming the limit, the JSON pointer the lowering had reached and the option that raises it.

Why cooperative, thread-local checks: a compile runs in a caller's thread (a server's compile
pool, a library user's), which cannot be stopped from outside; every loop that can run long
(the JSON Schema walk, subset construction, the context-free back end's splitting, lexeme
DFAs) checks the thread's deadline, so the compile stops itself within a few milliseconds of
the limit. Native loops get the time left as an argument and check the wall clock themselves
(they check no memory: their tables are bounded by the state limits).

The byte limit bounds the growth of the whole process's resident memory since the compile
started (/proc/self/statm's resident pages where it exists, else getrusage's peak RSS), not
the compile's own allocations: concurrent compiles in one process (a server's compile pool),
or anything else the process allocates meanwhile, count against each other's limits, a
conservative bound. Why RSS rather than tracemalloc: tracemalloc hooks every allocation of
every thread (a compile's lowering makes millions of small objects, and would run several
times slower), while one read of statm costs ~5-10 us; checks sample it only once SAMPLE_EVERY_S
of wall clock has passed since the last sample, so they stay near-free. Memory the process
already held and freed (free lists, glibc arenas) is reused without growing RSS, so only new
pages count. Knows nothing about grammars, automata or tokens.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from .errors import ConstraintError, Reason

try:
    import resource
except ImportError:  # Windows: no getrusage, no statm
    resource = None  # type: ignore[assignment]

clock = time.perf_counter  # wall clock: a caller's time limit is wall time
UNWIND_MARGIN = 0.05       # share of the limit kept for unwinding a stopped compile ...
UNWIND_MARGIN_MAX_S = 0.05  # ... at most this many seconds
SAMPLE_EVERY_S = 0.005     # a byte limit reads resident memory at most this often (~5-10 us a read)
MIB = 1 << 20
_STATM = "/proc/self/statm"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _statm_bytes() -> int | None:
    """Resident bytes now (Linux): statm's second field is resident pages. Opened per read,
    not kept open: after a fork a kept descriptor would read the parent's."""
    try:
        with open(_STATM, "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _peak_rss_bytes() -> int | None:
    """The process's peak resident bytes (where there is no statm): growth above an earlier
    peak only, so a compile's growth reads low until it passes that peak."""
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage if sys.platform == "darwin" else usage * 1024  # bytes on macOS, KiB elsewhere


_READER: Callable[[], int | None] | None = (
    _statm_bytes if os.path.exists(_STATM) else _peak_rss_bytes if resource is not None else None)


def resident_bytes() -> int | None:
    """The process's resident bytes now (statm), else its peak (getrusage), else None: where
    neither exists (Windows) a byte limit is not enforced."""
    return None if _READER is None else _READER()


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
    them, named in the error; max_bytes: growth of the process's resident memory since the
    compile started (None: no limit; see the module docstring), raised with memory_option;
    read_memory: what reads resident bytes (resident_bytes; tests pass a fake)."""

    limit_s: float | None = None
    max_states: int | None = None
    option: str = "Limits(compile_time_s=..., max_compile_states=...)"
    kind: str = "constraint"
    max_bytes: int | None = None
    memory_option: str = "Limits(max_compile_bytes=...)"
    read_memory: Callable[[], int | None] = field(default=resident_bytes, repr=False)
    started: float = field(default_factory=clock)
    where: str = ""         # the JSON pointer the lowering reached last ("" before any)
    stage: str = "lowering"  # what the compile was doing
    states: int = 0         # automaton states built so far
    grown: int = 0          # the most resident memory has grown by at a sample, in bytes
    tripped: str = ""       # "time", "states" or "memory" once exceeded: every later check raises again

    def __post_init__(self) -> None:
        # checks trip UNWIND_MARGIN early: unwinding a big compile frees its IR (tens of ms)
        margin = None if self.limit_s is None else min(UNWIND_MARGIN * self.limit_s, UNWIND_MARGIN_MAX_S)
        self.end = None if self.limit_s is None else self.started + self.limit_s - margin
        # None where there is no byte limit or nothing to read it with: no sampling at all
        self.base_bytes = None if self.max_bytes is None else self.read_memory()
        self.next_sample = self.started + SAMPLE_EVERY_S

    def left(self) -> float | None:
        """Wall seconds left (None: no time limit)."""
        return None if self.end is None else max(0.0, self.end - clock())

    def check(self) -> None:
        if not self.tripped and (self.end is not None or self.base_bytes is not None):
            now = clock()
            if self.end is not None and now > self.end:
                self.tripped = "time"
            elif self.base_bytes is not None and now >= self.next_sample:
                self._sample_memory(now)
        if self.tripped:
            raise DeadlineExceeded(self)

    def _sample_memory(self, now: float) -> None:
        """Read resident memory (at most every SAMPLE_EVERY_S) and trip past max_bytes of growth."""
        self.next_sample = now + SAMPLE_EVERY_S
        current = self.read_memory()
        if current is None or self.base_bytes is None or self.max_bytes is None:
            return
        self.grown = max(self.grown, current - self.base_bytes)
        if self.grown > self.max_bytes:
            self.tripped = "memory"

    def add_states(self, count: int) -> None:
        """Count `count` more automaton states against max_states (then check the other limits)."""
        self.states += count
        if self.max_states is not None and self.states > self.max_states:
            self.tripped = self.tripped or "states"
        self.check()

    def describe(self) -> str:
        spent = clock() - self.started
        option = self.option
        if self.tripped == "states":
            what = f"its state limit of {self.max_states} automaton states ({self.states} built)"
        elif self.tripped == "memory":
            what = f"its memory limit of {_mib(self.max_bytes or 0)} (resident memory grew {_mib(self.grown)})"
            option = self.memory_option
        else:
            what = f"its time limit of {self.limit_s:g} s ({spent:.3f} s spent)"
        reached = f" at {self.where}" if self.where else ""
        return (f"{self.kind} compile stopped at {what}{reached}, while {self.stage}; "
                f"raise it with {option}")

    def error(self) -> ConstraintError:
        return ConstraintError(self.describe(), Reason.LIMIT)


def _mib(count: int) -> str:
    return f"{count / MIB:.1f} MiB" if count % MIB else f"{count // MIB} MiB"


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
