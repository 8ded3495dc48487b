"""The complement of a finite set of strings ("every name except the declared ones").

Owns `not_in(words)` (a regular expression over decoded characters) and
`encoded_not_in(words)` (the same language over JSON string text, i.e.
`encode_expr(not_in(words))`, json_strings.py), both built from the words' trie.
Knows nothing about schemas: the JSON Schema front end asks for undeclared property
names (frontends/json/additional.py) and strings outside `not: {enum}` (scalars.py),
through frontends/json/not_in.py, which re-exports it; cfg/not_in_dfa.py reads the
words back (`words_of`). It sits in the regular stage so that that back-end module
needs no front-end import.

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
from deepinfer.constraints.ir import SURROGATES, CharClass, Expr, alt, literal, repeat, seq
from deepinfer.constraints.regular.json_strings import ANY_CHAR, encode_expr


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
    expr = _TrieComplement(words, encode_expr).expr
    if len(_WORDS) >= 4096:
        _WORDS.clear()
    _WORDS[expr] = words
    return expr


# encoded_not_in results -> their words, so that cfg/not_in_dfa.py can build the DFA of a
# lexeme that reads one from the words instead of determinizing its NFA (bounded)
_WORDS: dict[Expr, tuple[str, ...]] = {}


def words_of(expr: Expr) -> tuple[str, ...] | None:
    """The words w when `expr` is encoded_not_in(w) (as built here; IR nodes compare by
    value, so an equal expression built elsewhere names the same language), else None."""
    return _WORDS.get(expr)


class _TrieComplement:
    """Every string except the words: the trie's non-word nodes, or a path that leaves the
    trie followed by anything (one shared tail, so automata stay linear in the trie).

    Leaving node n means reading a character outside its children. That set is split in
    two: the few used characters that are not n's children (a small class per node), and
    characters no word uses at all (one big class U, shared by every node). Why: a
    complemented class per node encoded (UTF-8 ranges plus JSON escapes) to ~50 NFA
    states, so key tries of undeclared property names made lexemes of thousands of states
    whose determinization dominated compiles; the language is the same.

    The U exits stay "every trie path, then U" (P U below), although `A* U` (A: the used
    characters) is the same language with ~25% fewer NFA states: smaller tries fall under
    cfg/heads.py's MAX_HEAD_NFA and were then built eagerly as shared heads at compile
    time (+1.3 ms per MaskBench compile on average). The expression is kept exactly as before.

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
        # used code points, sorted, surrogates dropped (as CharClass.of would)
        self.used_cps = sorted(cp for cp in map(ord, used) if not SURROGATES[0] <= cp <= SURROGATES[1])
        self.others: dict[frozenset, Expr | None] = {}  # children -> used chars not among them
        self.chars: dict[str, Expr] = {}
        unused = CharClass.of([(ord(c), ord(c)) for c in used], negated=True)
        ends, leave, prefixes = self._walk(trie)
        if not unused.is_empty():
            leave = alt(seq(prefixes, enc(unused)), leave)
        self.expr = alt(ends, seq(leave, enc(repeat(ANY_CHAR))))

    def _char(self, ch: str) -> Expr:
        hit = self.chars.get(ch)
        if hit is None:
            hit = self.chars[ch] = self.enc(literal(ch))
        return hit

    def _walk(self, node: dict) -> tuple[Expr, Expr, Expr]:
        """Three languages from this node, in one walk (one recursion, not three):
        - ends: strings that stop inside the trie but not at a word end;
        - leaves: paths that leave the trie through a used character not a child here;
        - prefixes: every path from here (the empty one included)."""
        children = [ch for ch in node if ch]
        key = frozenset(children)
        others = self.others.get(key, False)
        if others is False:  # chains of one-child nodes share a handful of classes
            ranges = _ranges(self.used_cps, {ord(ch) for ch in children})
            others = self.others[key] = self.enc(CharClass(ranges)) if ranges else None
        ends = [] if "" in node else [ir.EMPTY]
        leaves = [] if others is None else [others]
        prefixes = [ir.EMPTY]
        for ch in children:
            c = self._char(ch)
            e, l, p = self._walk(node[ch])
            ends.append(seq(c, e))
            leaves.append(seq(c, l))
            prefixes.append(seq(c, p))
        return (alt(*ends) if ends else ir.NOTHING, alt(*leaves) if leaves else ir.NOTHING,
                alt(*prefixes))


def _ranges(cps: list[int], skip) -> tuple[tuple[int, int], ...]:
    """Sorted code points minus `skip` as merged ranges: the ranges CharClass.of would make,
    without sorting and merging per trie node."""
    ranges: list[tuple[int, int]] = []
    lo = hi = -2
    for cp in cps:
        if cp in skip:
            continue
        if cp == hi + 1:
            hi = cp
            continue
        if hi >= 0:
            ranges.append((lo, hi))
        lo = hi = cp
    if hi >= 0:
        ranges.append((lo, hi))
    return tuple(ranges)
