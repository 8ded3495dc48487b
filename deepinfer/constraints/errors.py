"""The compiler's user-facing error type.

`ConstraintError` is raised for a constraint the compiler cannot or will not
compile (bad syntax, unsupported construct, limits exceeded). It is a
`UserError`, so the CLI and the server report its message without a traceback.
"""

from __future__ import annotations

from deepinfer.errors import UserError


class ConstraintError(UserError):
    """A constraint that cannot be compiled; the message says what and where."""
