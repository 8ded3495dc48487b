"""Request bodies of each wire protocol, as strict pydantic models.

Every model forbids unknown fields: a field we do not implement is a 400
naming it, never silently ignored (the fail-open complaint of field notes 5.3).
Fields accepted only for compatibility and without effect are listed
explicitly on each model, with a comment saying why they are harmless.
"""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A request object that refuses unknown fields."""

    model_config = ConfigDict(extra="forbid")
