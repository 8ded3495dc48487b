"""Python's regex parser as the pattern modules use it: its opcodes, the pattern errors, shape tests.

Shared by pattern.py (the search language of a pattern), pattern_ends.py (end anchors inside
it) and pattern_looks.py (lookaheads): `C` and `sre_parse` are the standard library's parser
(its module names changed in Python 3.11), `ANY` is one decoded character, and the tests
below look at parsed items only. Knows nothing about JSON text or schemas.
"""

from __future__ import annotations

try:  # Python >= 3.11
    from re import _constants as C
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore
    import sre_parse  # type: ignore

from deepinfer.constraints.ir import CharClass

ANY = CharClass.any_char()


class PatternError(ValueError):
    """The pattern is not a regular language we can lower (or not a valid regex)."""


class MidAnchorError(PatternError):
    """An anchor where the plain reading cannot place it (pattern_ends.py may)."""


class PatternSyntaxError(PatternError):
    """The pattern is not a valid regex at all: a malformed value, never skipped (strict=False
    skips only valid patterns the compiler cannot enforce)."""


def starts_anchored(items: list) -> bool:
    return bool(items) and items[0][0] is C.AT and items[0][1] in (C.AT_BEGINNING, C.AT_BEGINNING_STRING)


def has_lookaround(items: list) -> bool:
    return contains_op(items, (C.ASSERT, C.ASSERT_NOT))


def contains_op(items: list, ops: tuple) -> bool:
    """Whether a parsed item with one of these opcodes occurs anywhere in `items`."""
    for op, av in items:
        if op in ops:
            return True
        if op is C.BRANCH and any(contains_op(list(b.data), ops) for b in av[1]):
            return True
        if op is C.SUBPATTERN and contains_op(list(av[3].data), ops):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and contains_op(list(av[2].data), ops):
            return True
    return False
