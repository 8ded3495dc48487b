"""The grammar IR every front end lowers into: regex, JSON Schema and EBNF.

A `Grammar` is a set of named rules over Unicode text; each rule body is an
`Expr` tree (literals, character classes, sequences, alternations, bounded
repetition and references to other rules). `str(grammar)` prints it back as
readable EBNF, so users and tests can see what was compiled.

This module knows nothing about tokenizers, automata or the engine: it is the
contract between front ends (which build it) and back ends (which compile it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir_ranges import MAX_CODEPOINT, SURROGATES  # noqa: F401 - re-exported
from .ir_ranges import complement as _complement
from .ir_ranges import normalize_ranges as _normalize_ranges
from .ir_ranges import remove_surrogates as _remove_surrogates


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


EMPTY = Seq(())
NOTHING = Alt(())


@dataclass
class Grammar:
    """Named rules plus a start rule. Rule order is kept for printing.

    `annotations` collects what a front end accepted without enforcing
    (for example unknown JSON Schema `format` values), for the user to see.
    """

    rules: dict[str, Expr]
    start: str = "start"
    annotations: list[str] = field(default_factory=list)
    # unused now (referenced rules are memoized on the IR nodes); kept because
    # cfg/lexemes.py still copies it between grammars
    _refs: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.start not in self.rules:
            raise ValueError(f"start rule {self.start!r} is not defined")

    def __str__(self) -> str:
        width = max(len(name) for name in self.rules)
        lines = [f"{name.ljust(width)} ::= {to_ebnf(body)}" for name, body in self.rules.items()]
        return "\n".join(lines)

    def referenced_rules(self, name: str) -> set[str]:
        """Names of the rules that rule `name` refers to directly (a fresh set).

        Memoized on the body's nodes (rule_refs), so grammars that share bodies
        (split, unsplit, unrolled copies of one lowering) walk each node once."""
        return set(rule_refs(self.rules[name]))


def walk(expr: Expr):
    """Yield `expr` and all its sub-expressions, depth first."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (Seq, Alt)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Repeat):
            stack.append(node.item)


def walk_unique(expr: Expr):
    """Like walk, but each shared sub-expression (same object) only once."""
    seen: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, (Seq, Alt)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Repeat):
            stack.append(node.item)


# ---------------------------------------------------------------- constructors
# Smart constructors flatten and simplify so front ends can compose freely.

def seq(*items: Expr) -> Expr:
    # class checks, not `== NOTHING`: a Python-level __eq__ per item was most of this call
    if len(items) == 2:  # the common case (tries, chains): same result as the general path
        a, b = items
        ca, cb = a.__class__, b.__class__
        if ca is not Seq:
            if cb is Seq:
                if not b.items:  # x ε = x
                    return a
            elif (ca is Alt and not a.items) or (cb is Alt and not b.items):
                return NOTHING
            elif ca is Literal and cb is Literal:
                return Literal(a.text + b.text)
            else:
                return Seq(items)
    flat: list[Expr] = []
    for item in items:
        cls = item.__class__
        if cls is Seq:
            flat.extend(item.items)
        elif cls is Alt and not item.items:
            return NOTHING
        else:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    if not flat:
        return EMPTY
    for i in range(len(flat) - 1):
        if flat[i].__class__ is Literal and flat[i + 1].__class__ is Literal:
            flat = _merge_literals(flat)
            return flat[0] if len(flat) == 1 else Seq(tuple(flat))
    return Seq(tuple(flat))


def alt(*items: Expr) -> Expr:
    if len(items) == 2:  # the common cases: same result as the general path
        a, b = items
        if a.__class__ is not Alt:
            if b.__class__ is not Alt:
                return a if a is b or (a._h == b._h and a == b) else Alt(items)
            if not b.items:  # x | nothing = x
                return a
    elif len(items) == 1 and items[0].__class__ is not Alt:
        return items[0]
    flat: dict[Expr, None] = {}  # ordered set: dedup by cached hash, not pairwise ==
    for item in items:
        if isinstance(item, Alt):
            flat.update(dict.fromkeys(item.items))
        else:
            flat[item] = None
    if len(flat) == 1:
        return next(iter(flat))
    return Alt(tuple(flat))


def repeat(item: Expr, min: int = 0, max: int | None = None) -> Expr:
    if max is not None and max < min:
        return NOTHING
    if max == 0 or (item.__class__ is Seq and not item.items):
        return EMPTY
    if min == max == 1:
        return item
    return Repeat(item, min, max)


def optional(item: Expr) -> Expr:
    return repeat(item, 0, 1)


def literal(text: str) -> Expr:
    return Literal(text) if text else EMPTY


def _merge_literals(items: list[Expr]) -> list[Expr]:
    """Adjacent literals joined into one (one new node per run; a lone literal kept as is)."""
    merged: list[Expr] = []
    run: list[Expr] = []
    for item in items + [None]:
        if item.__class__ is Literal:
            run.append(item)
            continue
        if run:
            merged.append(run[0] if len(run) == 1 else Literal("".join(r.text for r in run)))
            run = []
        if item is not None:
            merged.append(item)
    return merged


from .ir_print import to_ebnf  # noqa: E402 - printing needs the node classes above
