"""Finite sets of words on the IR: spelled out, or taken out of a regular language.

Owns `words` (a finite set as a trie-shaped alternation) and `minus_words`
(a regular language minus a finite set, exactly): Brzozowski derivatives and
first-character restriction over IR expressions (literals, classes, sequences,
alternations, bounded repetition), used to take declared property names out of
`patternProperties` and `propertyNames` languages and excluded values out of
string languages (a DFA leaf's by dfa_ops). Knows only the IR and dfa_ops.
"""

from __future__ import annotations

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, repeat, seq

from .pattern import PatternError


def minus_words(e: Expr, words) -> Expr:
    """L(e) minus a finite set of strings, exactly (Brzozowski derivatives along a trie; a DFA
    leaf by a DFA product, which raises dfa_ops.DfaOpError past LEAF_PRODUCT states)."""
    words = [w for w in dict.fromkeys(words)]
    if not words:
        return e
    if isinstance(e, ir.ByteDfa):
        return dfa_ops.as_leaf(dfa_ops.minus(dfa_ops.expr_dfa(e), dfa_ops.expr_dfa(_trie_expr(_trie(words))),
                                             LEAF_PRODUCT))
    return _minus(e, _trie(words))


LEAF_PRODUCT = 24_000  # product states minus_words may build for a leaf (the leaf plus the words' trie)


def words(items) -> Expr:
    """A finite set of strings as a trie-shaped alternation (shared prefixes)."""
    return _trie_expr(_trie(items))


def _trie(items) -> dict:
    """Nested dicts, one level a character; the key "" marks the end of a word."""
    trie: dict = {}
    for w in items:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = True
    return trie


def _trie_expr(node: dict) -> Expr:
    parts = []
    for ch, child in node.items():
        parts.append(ir.EMPTY if ch == "" else seq(ir.literal(ch), _trie_expr(child)))
    return alt(*parts) if parts else ir.NOTHING


def _minus(e: Expr, node: dict) -> Expr:
    children = [ch for ch in node if ch]
    parts = []
    if "" not in node and nullable(e):
        parts.append(ir.EMPTY)
    excluded = CharClass.of([(ord(c), ord(c)) for c in children])
    parts.append(restrict_first(e, excluded))
    for ch in children:
        d = derivative(e, ch)
        if d != ir.NOTHING:
            parts.append(seq(ir.Literal(ch), _minus(d, node[ch])))
    return alt(*parts)


def nullable(e: Expr) -> bool:
    match e:
        case ir.Literal(text):
            return text == ""
        case CharClass():
            return False
        case ir.Seq(items):
            return all(nullable(i) for i in items)
        case ir.Alt(items):
            return any(nullable(i) for i in items)
        case ir.Repeat(item, lo, _):
            return lo == 0 or nullable(item)
    raise PatternError(f"cannot analyse {e!r}")


def _rest_of_repeat(item: Expr, lo: int, hi: int | None) -> Expr:
    lo = 0 if nullable(item) else max(lo - 1, 0)
    return repeat(item, lo, None if hi is None else hi - 1)


def derivative(e: Expr, ch: str) -> Expr:
    """{w : ch + w in L(e)}."""
    def leaf(atom: Expr) -> Expr:
        if isinstance(atom, ir.Literal):
            return ir.literal(atom.text[1:]) if atom.text[:1] == ch else ir.NOTHING
        return ir.EMPTY if atom.contains(ord(ch)) else ir.NOTHING
    return _first_step(e, leaf)


def restrict_first(e: Expr, excluded: CharClass) -> Expr:
    """The non-empty strings of L(e) whose first character is not in `excluded`."""
    keep = CharClass.of(excluded.ranges, negated=True)

    def leaf(atom: Expr) -> Expr:
        if isinstance(atom, ir.Literal):
            return atom if atom.text and not excluded.contains(ord(atom.text[0])) else ir.NOTHING
        allowed = CharClass.of([(max(lo, x), min(hi, y)) for lo, hi in atom.ranges for x, y in keep.ranges
                                if max(lo, x) <= min(hi, y)])
        return ir.NOTHING if allowed.is_empty() else allowed
    return _first_step(e, leaf)


def _first_step(e: Expr, leaf) -> Expr:
    """The walk shared by derivative and restrict_first: `leaf` rewrites each literal or
    class that can be read first, and whatever follows it is kept."""
    match e:
        case ir.Literal() | CharClass():
            return leaf(e)
        case ir.Seq(items):
            if not items:
                return ir.NOTHING
            head, rest = items[0], seq(*items[1:])
            parts = [seq(_first_step(head, leaf), rest)]
            if nullable(head):
                parts.append(_first_step(rest, leaf))
        case ir.Alt(items):
            parts = [_first_step(i, leaf) for i in items]
        case ir.Repeat(item, lo, hi):
            if hi == 0:
                return ir.NOTHING
            return seq(_first_step(item, leaf), _rest_of_repeat(item, lo, hi))
        case _:
            raise PatternError(f"cannot analyse {e!r}")
    parts = [p for p in parts if p != ir.NOTHING]
    return alt(*parts) if parts else ir.NOTHING


def spell_out(e: Expr, cap: int) -> list[str] | None:
    """Every string of L(e) when it is finite and has at most `cap` of them, else None (an
    unbounded repetition, a rule reference, or too many). Why: uniqueItems over items whose
    pattern allows a handful of strings (`^[a-c]$`) becomes a finite item set (json_arrays)."""
    got = _spell(e, cap)
    return None if got is None else sorted(got)


def _spell(e: Expr, cap: int) -> set[str] | None:
    if isinstance(e, ir.Literal):
        return {e.text}
    if isinstance(e, CharClass):
        if sum(hi - lo + 1 for lo, hi in e.ranges) > cap:
            return None
        return {chr(c) for lo, hi in e.ranges for c in range(lo, hi + 1)}
    if isinstance(e, ir.Alt):
        out: set[str] = set()
        for item in e.items:
            got = _spell(item, cap)
            if got is None or len(out | got) > cap:
                return None
            out |= got
        return out
    if isinstance(e, ir.Seq):
        out = {""}
        for item in e.items:
            got = _spell(item, cap)
            if got is None or len(out) * len(got) > cap * cap:
                return None
            out = {a + b for a in out for b in got}
            if len(out) > cap:
                return None
        return out
    if isinstance(e, ir.Repeat) and e.max is not None:
        one = _spell(e.item, cap)
        if one is None:
            return None
        out, layer = ({""} if e.min == 0 else set()), {""}
        for n in range(1, e.max + 1):
            layer = {a + b for a in layer for b in one}
            if len(layer) > cap:
                return None
            if n >= e.min:
                out |= layer
                if len(out) > cap:
                    return None
        return out
    return None
