"""The IR's expression nodes: Literal, CharClass, Seq, Alt, Repeat, RuleRef and ByteDfa.

Owns what a node is (its fields, its cached hash and the rule names it
references) and the two constants EMPTY and NOTHING. Split out of ir.py, which
re-exports every name here; users import `ir`, not this module. Knows nothing
about grammars, simplifying constructors (ir_build.py) or printing.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ranges import MAX_CODEPOINT
from .ranges import complement as _complement
from .ranges import normalize_ranges as _normalize_ranges
from .ranges import remove_surrogates as _remove_surrogates


class Expr:
    """Base class of IR expressions (immutable, hashable).

    Each node computes its hash once, at construction, from its children's
    cached hashes (`_h`). Why: front ends share subtrees and compare or hash
    whole expressions (alternative dedup, lexeme cache keys); the dataclass
    default re-hashed and compared trees recursively on every call, which was a
    large part of a JSON Schema compile. Equality checks identity, then the
    cached hashes, and only then the fields.
    """

    __slots__ = ("_h", "_r")  # _r: the rule names referenced inside (see rule_refs)

    # Each node class writes its own __init__ (dataclass init=False): fields, `_h` and `_r`
    # set directly. Why: IR construction is ~a third of lowering a JSON Schema, and the
    # generated frozen __init__ plus a shared __post_init__ (method calls, tuple concatenation,
    # a class-name lookup) cost ~2 us per node.

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented if not isinstance(other, Expr) else False
        return self._h == other._h and self._values() == other._values()

    def __reduce__(self):  # rebuild (and re-hash) in the receiving process
        return (self.__class__, self._values())


_NO_REFS: frozenset = frozenset()


def rule_refs(expr: Expr) -> frozenset:
    """The names of the rules referenced anywhere inside `expr` (O(1): kept on each node).

    Why on the node: front ends share subtrees (the JSON value, string bodies) and
    several grammars share rule bodies; recursion checks, the lexical split and
    lexeme cache keys all ask, and walking bodies per grammar was ~5% of a median
    JSON Schema compile. Each node's __init__ computes it from its children's."""
    return expr._r


def _union_refs(items) -> frozenset:
    """The union of the items' referenced rule names (shares a child's set when it can)."""
    found = _NO_REFS
    for item in items:
        refs = item._r
        if refs and refs is not found and not refs <= found:
            found = refs if not found else found | refs
    return found


_set = object.__setattr__  # frozen dataclasses: fields are written once, here


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Literal(Expr):
    """An exact Unicode string ('' is the empty string)."""

    text: str

    def __init__(self, text: str) -> None:
        _set(self, "text", text)
        _set(self, "_h", hash(("Literal", text)))
        _set(self, "_r", _NO_REFS)

    def _values(self) -> tuple:
        return (self.text,)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class CharClass(Expr):
    """One character from a union of inclusive code point ranges.

    Ranges are normalized: sorted, merged, surrogates removed. Negation is
    resolved at construction time with `CharClass.of(..., negated=True)`.
    """

    ranges: tuple[tuple[int, int], ...]

    def __init__(self, ranges: tuple[tuple[int, int], ...]) -> None:
        _set(self, "ranges", ranges)
        _set(self, "_h", hash(("CharClass", ranges)))
        _set(self, "_r", _NO_REFS)

    def _values(self) -> tuple:
        return (self.ranges,)

    @staticmethod
    def of(ranges, negated: bool = False) -> "CharClass":
        merged = _normalize_ranges(ranges)
        if negated:
            merged = _complement(merged)
        return CharClass(_remove_surrogates(merged))

    @staticmethod
    def any_char() -> "CharClass":
        return CharClass.of([(0, MAX_CODEPOINT)])

    def is_empty(self) -> bool:
        return not self.ranges

    def contains(self, codepoint: int) -> bool:
        return any(lo <= codepoint <= hi for lo, hi in self.ranges)


def _init_items(node: Expr, tag: str, items: tuple[Expr, ...]) -> None:
    """Seq's and Alt's constructor: items, cached hash and referenced rules."""
    _set(node, "items", items)
    if len(items) == 2:  # most nodes: children's cached hashes and rule sets read inline
        a, b = items
        _set(node, "_h", hash((tag, a._h, b._h)))
        ra, rb = a._r, b._r
        _set(node, "_r", ra if not rb or rb is ra else rb if not ra else ra | rb)
    else:
        _set(node, "_h", hash((tag, items)))
        _set(node, "_r", _union_refs(items))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Seq(Expr):
    """Concatenation; `Seq(())` is the empty string."""

    items: tuple[Expr, ...]

    def __init__(self, items: tuple[Expr, ...]) -> None:
        _init_items(self, "Seq", items)

    def _values(self) -> tuple:
        return (self.items,)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Alt(Expr):
    """Alternation; `Alt(())` is the empty language (matches nothing)."""

    items: tuple[Expr, ...]

    def __init__(self, items: tuple[Expr, ...]) -> None:
        _init_items(self, "Alt", items)

    def _values(self) -> tuple:
        return (self.items,)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Repeat(Expr):
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: Expr
    min: int = 0
    max: int | None = None

    def __init__(self, item: Expr, min: int = 0, max: int | None = None) -> None:  # noqa: A002
        _set(self, "item", item)
        _set(self, "min", min)
        _set(self, "max", max)
        _set(self, "_h", hash(("Repeat", item, min, max)))
        _set(self, "_r", item._r)

    def _values(self) -> tuple:
        return (self.item, self.min, self.max)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class RuleRef(Expr):
    """A reference to another rule of the same grammar, by name."""

    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)
        _set(self, "_h", hash(("RuleRef", name)))
        _set(self, "_r", frozenset((name,)))

    def _values(self) -> tuple:
        return (self.name,)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class ByteDfa(Expr):
    """A regular language given as a DFA over UTF-8 bytes, not as an expression.

    Why: some languages have no compact expression (a `pattern` intersected with
    `format: email` counts label lengths in both; state elimination blows up), yet
    their DFA is small. `trans` is int32 [S, 256] (-1 dead), `accepting` bool [S],
    start state 0; both read-only. The DFA must be minimal and canonically numbered
    (dfa_ops builds it so), so `digest` names the language: equal digests, equal
    languages. Its strings are UTF-8 text of whatever alphabet the context reads
    (decoded characters before regular/json_strings.encode_expr, JSON string text after)."""

    trans: object
    accepting: object
    digest: str

    def __init__(self, trans, accepting, digest: str) -> None:
        _set(self, "trans", trans)
        _set(self, "accepting", accepting)
        _set(self, "digest", digest)
        _set(self, "_h", hash(("ByteDfa", digest)))
        _set(self, "_r", _NO_REFS)

    def _values(self) -> tuple:
        return (self.digest,)

    def __reduce__(self):
        return (ByteDfa, (self.trans, self.accepting, self.digest))

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])


EMPTY = Seq(())
NOTHING = Alt(())
