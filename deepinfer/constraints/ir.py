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

MAX_CODEPOINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)  # not encodable in UTF-8, never part of a class


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

    def __post_init__(self) -> None:  # the dataclass __init__ of every node calls this
        object.__setattr__(self, "_h", hash((self.__class__.__name__,) + self._values()))
        object.__setattr__(self, "_r", _refs_at_construction(self))

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
    JSON Schema compile. Computing it at construction costs one small union per
    node, from children that already know theirs."""
    return expr._r


def _refs_at_construction(node: Expr) -> frozenset:
    cls = node.__class__
    if cls is Seq or cls is Alt:
        found = _NO_REFS
        for item in node.items:
            refs = item._r
            if refs and refs is not found and not refs <= found:
                found = refs if not found else found | refs
        return found
    if cls is Repeat:
        return node.item._r
    if cls is RuleRef:
        return frozenset((node.name,))
    return _NO_REFS


@dataclass(frozen=True, slots=True, eq=False)
class Literal(Expr):
    """An exact Unicode string ('' is the empty string)."""

    text: str
    def _values(self) -> tuple:
        return (self.text,)


@dataclass(frozen=True, slots=True, eq=False)
class CharClass(Expr):
    """One character from a union of inclusive code point ranges.

    Ranges are normalized: sorted, merged, surrogates removed. Negation is
    resolved at construction time with `CharClass.of(..., negated=True)`.
    """

    ranges: tuple[tuple[int, int], ...]
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


@dataclass(frozen=True, slots=True, eq=False)
class Seq(Expr):
    """Concatenation; `Seq(())` is the empty string."""

    items: tuple[Expr, ...]
    def _values(self) -> tuple:
        return (self.items,)


@dataclass(frozen=True, slots=True, eq=False)
class Alt(Expr):
    """Alternation; `Alt(())` is the empty language (matches nothing)."""

    items: tuple[Expr, ...]
    def _values(self) -> tuple:
        return (self.items,)


@dataclass(frozen=True, slots=True, eq=False)
class Repeat(Expr):
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: Expr
    min: int = 0
    max: int | None = None
    def _values(self) -> tuple:
        return (self.item, self.min, self.max)


@dataclass(frozen=True, slots=True, eq=False)
class RuleRef(Expr):
    """A reference to another rule of the same grammar, by name."""

    name: str
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
    flat: list[Expr] = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif item == NOTHING:
            return NOTHING
        else:
            flat.append(item)
    flat = _merge_literals(flat)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def alt(*items: Expr) -> Expr:
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
    if max == 0 or item == EMPTY:
        return EMPTY
    if min == max == 1:
        return item
    return Repeat(item, min, max)


def optional(item: Expr) -> Expr:
    return repeat(item, 0, 1)


def literal(text: str) -> Expr:
    return Literal(text) if text else EMPTY


def _merge_literals(items: list[Expr]) -> list[Expr]:
    merged: list[Expr] = []
    for item in items:
        if isinstance(item, Literal) and merged and isinstance(merged[-1], Literal):
            merged[-1] = Literal(merged[-1].text + item.text)
        else:
            merged.append(item)
    return merged


# ------------------------------------------------------------------- printing

def to_ebnf(expr: Expr) -> str:
    """Print one expression in EBNF (the same notation xgrammar prints)."""
    match expr:
        case Literal(text):
            return _quote(text)
        case CharClass():
            return _class_to_ebnf(expr)
        case RuleRef(name):
            return name
        case Seq(()):
            return '""'
        case Seq(items):
            return " ".join(_parenthesize(item, Alt) for item in items)
        case Alt(()):
            return "(/* nothing */)"
        case Alt(items):
            return " | ".join(_parenthesize(item, Alt) for item in items)
        case Repeat(item, lo, hi):
            inner = _parenthesize(item, (Seq, Alt))
            if isinstance(item, Repeat):  # "x+?" would read as a lazy quantifier
                inner = f"({inner})"
            return inner + _repeat_suffix(lo, hi)
    raise TypeError(f"not an IR expression: {expr!r}")


def _parenthesize(expr: Expr, kinds) -> str:
    text = to_ebnf(expr)
    if isinstance(expr, kinds) and len(getattr(expr, "items", ())) > 1:
        return f"({text})"
    return text


def _repeat_suffix(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if hi is None:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


def _quote(text: str) -> str:
    return '"' + "".join(_escape_char(ch, '"') for ch in text) + '"'


def _escape_char(ch: str, special: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
    if ch in named:
        return named[ch]
    if ch in special:
        return "\\" + ch
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\x{ord(ch):02x}"
    return ch


def _class_to_ebnf(cls: CharClass) -> str:
    if cls == CharClass.any_char():
        return "[^]"
    parts = []
    for lo, hi in cls.ranges:
        a = _escape_char(chr(lo), "]-^")
        parts.append(a if lo == hi else f"{a}-{_escape_char(chr(hi), ']-^')}")
    return "[" + "".join(parts) + "]"


# ------------------------------------------------------------- range algebra

def _normalize_ranges(ranges) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for lo, hi in sorted((int(a), int(b)) for a, b in ranges if a <= b):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return tuple(out)


def _remove_surrogates(ranges) -> tuple[tuple[int, int], ...]:
    s_lo, s_hi = SURROGATES
    out = []
    for lo, hi in ranges:
        if hi < s_lo or lo > s_hi:
            out.append((lo, hi))
            continue
        if lo < s_lo:
            out.append((lo, s_lo - 1))
        if hi > s_hi:
            out.append((s_hi + 1, hi))
    return tuple(out)
