"""The complement of a finite set of strings ("every name except the declared ones").

Owns `not_in(words)` (a regular expression over decoded characters) and
`encoded_not_in(words)` (the same language over JSON string text, i.e.
`encode_expr(not_in(words))`), both built from the words' trie. Knows nothing
about schemas: json_objects asks for undeclared property names, json_scalars for
strings outside `not: {enum}`.

Why a module of its own: every object whose additional members are allowed asks for
the complement of its property names, and that was the largest single piece of a
median MaskBench lowering: one `CharClass` per trie node (sorted and merged each
time), then a second walk over the whole trie to JSON-encode it (`encode_expr`,
memoized per node, but every node of a new trie is new). Here the per-node classes
are memoized by the node's set of children, and the encoded form is built in the
same walk from encoded pieces (each cached per character or class).
"""

from __future__ import annotations

import functools
from typing import Callable

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, repeat, seq

from .json_text import ANY_CHAR, encode_expr


def not_in(words) -> Expr:
    """Every string except the given ones (over decoded characters)."""
    return _not_in(tuple(words))


def encoded_not_in(words) -> Expr:
    """`encode_expr(not_in(words))`, built directly (the same language over JSON text)."""
    return _encoded_not_in(tuple(words))


@functools.lru_cache(maxsize=1024)  # an object asks for its names' complement up to three times
def _not_in(words: tuple[str, ...]) -> Expr:
    return _TrieComplement(words, lambda e: e).expr


@functools.lru_cache(maxsize=1024)
def _encoded_not_in(words: tuple[str, ...]) -> Expr:
    return _TrieComplement(words, encode_expr).expr


class _TrieComplement:
    """Every string except the words: the trie's non-word nodes, or a path that leaves the
    trie followed by anything (one shared tail, so automata stay linear in the trie).

    Leaving node n means reading a character outside its children. That set is split in
    two: characters no word uses at all (one big class, shared by every node: P·S below)
    and the few used characters that are not n's children (a small class per node). Why:
    a complemented class per node encoded (UTF-8 ranges plus JSON escapes) to ~50 NFA
    states, so key tries of undeclared property names made lexemes of thousands of states
    whose determinization dominated compiles; the language is the same.

    `enc` maps each leaf piece (a one-character literal, a class, the any-string tail)
    into the output alphabet: the identity, or JSON encoding (encode_expr commutes with
    seq/alt/repeat, so encoding the pieces encodes the whole)."""

    def __init__(self, words: tuple[str, ...], enc: Callable[[Expr], Expr]) -> None:
        self.enc = enc
        trie: dict = {}
        used: set[str] = set()
        for w in words:
            node = trie
            for ch in w:
                node = node.setdefault(ch, {})
                used.add(ch)
            node[""] = True
        self.used = used
        self.others: dict[frozenset, Expr | None] = {}  # children -> used chars not among them
        self.chars: dict[str, Expr] = {}
        unused = CharClass.of([(ord(c), ord(c)) for c in used], negated=True)
        leave = self._leaves(trie)
        if not unused.is_empty():
            leave = alt(seq(self._prefixes(trie), enc(unused)), leave)
        self.expr = alt(self._ends_inside(trie), seq(leave, enc(repeat(ANY_CHAR))))

    def _char(self, ch: str) -> Expr:
        hit = self.chars.get(ch)
        if hit is None:
            hit = self.chars[ch] = self.enc(literal(ch))
        return hit

    def _ends_inside(self, node: dict) -> Expr:
        parts = [] if "" in node else [ir.EMPTY]
        parts += [seq(self._char(ch), self._ends_inside(sub)) for ch, sub in node.items() if ch]
        return alt(*parts) if parts else ir.NOTHING

    def _prefixes(self, node: dict) -> Expr:
        """Every path from this node (the empty one included)."""
        return alt(ir.EMPTY, *(seq(self._char(ch), self._prefixes(sub)) for ch, sub in node.items() if ch))

    def _leaves(self, node: dict) -> Expr:
        """Paths that leave the trie through a used character that is not a child here."""
        children = [ch for ch in node if ch]
        key = frozenset(children)
        if key not in self.others:  # chains of one-child nodes share a handful of classes
            cls = CharClass.of([(ord(c), ord(c)) for c in self.used if c not in key])
            self.others[key] = None if cls.is_empty() else self.enc(cls)
        others = self.others[key]
        parts = [] if others is None else [others]
        parts += [seq(self._char(ch), self._leaves(node[ch])) for ch in children]
        return alt(*parts) if parts else ir.NOTHING
