"""What a keyword's lowering may ask of the walk, and the table the walk dispatches through.

`Lowering` is the walk (lowerer.Lowerer) as the keyword modules see it: recursion into
sub-schemas (`lower`, `lower_normal`, `normalize`, `merged`), the verdict on concrete
values (`valid`), failing closed (`fail`, `unsupported`, `check_time`), unconstrained
values (`any_value`) and the walk's options. `Keywords` is the dispatch table the walk is
given (keywords.KEYWORDS): the lowering of each JSON type and of composition. Both sides
import this module and neither imports the other, so the walk and the keyword modules
form no import cycle. Knows nothing about tokens or automata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Protocol

from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import Expr

from .drafts import Draft
from .refs import Node, Refs
from .text import Whitespace


class Lowering(Protocol):
    """The walk over one schema, as a keyword's lowering uses it."""

    ws: Whitespace
    draft: Draft
    refs: Refs
    spans: int                 # maxItems - minItems summed over the arrays lowered (arrays.py)
    unique_matcher: bool       # uniqueItems over unbounded item sets is left to the matcher
    capped: frozenset          # caps.py: the long maxLength nodes the matcher counts
    unknown_formats: str       # "annotate" or "refuse" (lower_json_schema's option)
    number_digits: int | None  # digits.py: the digit limit on numbers (None: off)

    def lower(self, node: Node, memo: bool = True) -> Expr: ...

    def lower_normal(self, d: dict | bool, node: Node) -> Expr: ...

    def normalize(self, node: Node) -> dict | bool: ...

    def merged(self, a: dict | bool, b: dict | bool, where: Node) -> dict | bool: ...

    def valid(self, value, node: Node, listed: bool = False) -> bool: ...

    def any_value(self, depth: int | None = None) -> Expr: ...

    def additional_depth(self) -> int | None: ...

    def fail(self, ptr: str, message: str) -> ConstraintError: ...

    def unsupported(self, ptr: str, keyword: str, message: str) -> None: ...

    def check_time(self, ptr: str) -> None: ...

    def note(self, text: str) -> None: ...

    def empty_mark(self) -> int: ...

    def forgive_empty(self, mark: int) -> None: ...

    def blame_empty(self, ptr: str) -> None: ...


TypeLowering = Callable[[Lowering, dict, Node], Expr]  # (walk, normalized schema, its node) -> language


class Composer(Protocol):
    """`anyOf`, `oneOf`, `not`, `if`: one per walk (it keeps the depth of nested negations)."""

    def lower(self, d: dict, node: Node) -> Expr: ...


@dataclass(frozen=True)
class Keywords:
    """The walk's dispatch table: how a normalized schema of each JSON type is lowered
    (`by_type`, keyed by merge.TYPES' names) and the composition a walk starts with."""

    by_type: Mapping[str, TypeLowering]
    composition: Callable[[Lowering], Composer]
