"""Faults in speculation's own work: the sequence goes on without drafts, and nobody fails.

Drafting only decides which tokens a step verifies besides the plain row; sampled-verify keeps the
outputs those of the plain path whatever is drafted. So a fault while proposing, walking or
scheduling a draft (a drafter's index, a constraint walk that raises, the survival or cost model)
need not end any request:
- the sequence whose proposal or walk raised drafts no more for the rest of its life (its state
  would raise again), and goes on decoding as with speculation off;
- a fault no sequence can be blamed for drops every draft of that step;
- each fault is logged (the first of each kind with its traceback) and counted
  (`speculation_faults` in the engine's stats).
A matcher that raised while a draft was walked through it is rolled back as after any walk; if its
state is broken, the plain step's mask raises too and the engine's step isolation (isolation.py)
fails that request alone; a matcher that cannot be rolled back is reported (`take_broken`) and
the engine fails its request before the step. Knows nothing about the model, the KV cache or sampling.
"""

from __future__ import annotations

import functools
import logging
from typing import Callable, TypeVar

log = logging.getLogger("deepinfer.speculation")

T = TypeVar("T")


class SpeculationFaults:
    """Which sequences draft no more (`barred`), and how many faults speculation contained."""

    def __init__(self) -> None:
        self.barred: set[object] = set()
        # (sequence, error) whose matcher a walk could not roll back: the engine fails them
        self.broken: list[tuple[object, BaseException]] = []
        self.count = 0
        self._logged: set[str] = set()

    def bar(self, key: object, exc: BaseException, where: str) -> None:
        """The sequence `key` raised `exc` while `where`: it drafts no more."""
        self.barred.add(key)
        self._note(exc, f"{where} for sequence {key!r}; it goes on without drafts")

    def unattributed(self, exc: BaseException, where: str) -> None:
        """A fault no sequence is blamed for: this step's drafts are dropped."""
        self._note(exc, f"{where}; this step verifies no drafts")

    def take_broken(self) -> list[tuple[object, BaseException]]:
        broken, self.broken = self.broken, []
        return broken

    def forget(self, key: object) -> None:
        self.barred.discard(key)

    def _note(self, exc: BaseException, what: str) -> None:
        self.count += 1
        kind = f"{type(exc).__name__}: {what.split(' for sequence')[0]}"
        first = kind not in self._logged
        self._logged.add(kind)
        log.warning("speculation fault while %s (%s: %s)", what, type(exc).__name__, exc, exc_info=first)


def contained(where: str) -> Callable[[Callable[..., T]], Callable[..., T | None]]:
    """A Speculator method whose fault is counted and logged instead of raised (it returns None):
    learning from outcomes and forgetting a finished sequence change no output."""
    def wrap(method: Callable[..., T]) -> Callable[..., T | None]:
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - speculation's faults never reach a request
                self.faults.unattributed(exc, where)
                return None
        return run
    return wrap
