"""The compiler's user-facing error type.

`ConstraintError` is raised for a constraint the compiler cannot or will not
compile (bad syntax, unsupported construct, limits exceeded). It is a
`UserError`, so the CLI and the server report its message without a traceback.
Its `reason` tells apart the failures a caller reacts to (never its text): an
automaton build that met one of its limits (another back end, or naming the
sub-schema responsible, may still help) and a constraint that matches nothing.
One type for all, so a refusal reads the same to every caller whatever its reason.
"""

from __future__ import annotations

import enum

from deepinfer.errors import UserError


class Reason(enum.Enum):
    LIMIT = "an automaton build met one of its Limits (NFA or DFA states, CPU time, lexemes)"
    EMPTY = "the constraint matches no string (its automaton has no accepting path)"


class ConstraintError(UserError):
    """A constraint that cannot be compiled; the message says what and where."""

    def __init__(self, message: str, reason: Reason | None = None) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def limit(self) -> bool:
        """An automaton build met one of its limits."""
        return self.reason is Reason.LIMIT
