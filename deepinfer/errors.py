"""User-facing error types shared by every layer.

A `UserError` is bad input from the user (a model file, a config, a request):
the CLI prints its message as one paragraph and exits non-zero, with no traceback.
"""


class UserError(Exception):
    """Bad input that the user can fix; the message says what and where."""


class ModelLoadError(UserError):
    """A model file or directory cannot be loaded (missing, corrupt, unsupported)."""
