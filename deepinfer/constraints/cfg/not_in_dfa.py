"""The DFA of "any key but these names" followed by a tail, built from the names.

An object whose undeclared members are allowed reads
its member names through K = encoded_not_in(names) (constraints/not_in.py):
every JSON string body whose decoded value is not a declared name. Its lexeme's
rest `K "` `:` ws ... (composed.py) used to be determinized from an NFA of thousands
of states (one encoded class per trie node), 5-150 ms inside the mask step that
first reached it. Here it is assembled directly:

- G: the DFA of enc(any character)* . tail (determinized once per tail: ~50 states),
  whose start g0 is "after a complete character, anywhere past the trie";
- one state per trie node (a prefix of some names, at a character boundary) and one
  per proper prefix of a child character's spelling (multi-byte UTF-8, escapes).

A trie state reads a byte b like this: a byte that continues a child's spelling goes
to the child (or the spelling's next prefix state); any other byte goes where G goes
from g0 after the bytes of the character read so far (the character is not a child:
the name has left the trie). A node that is not a name reads the tail's first bytes
like g0; a node that is a name does not (the name is declared). Exact when the
spellings form a prefix code (JSON's do) and no tail byte starts a character
(checked; else None and the caller determinizes as before). The table need not be
minimal. Knows nothing about tokens or parsing.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from .. import ir
from ..regular.dfa import Limits, determinize_expr
from ..errors import ConstraintError
from ..regular.gcpause import gc_paused
from ..ir.ranges import SURROGATES
from ..regular.facts import FactsCache
from ..regular.json_strings import ANY_CHAR, encode_codepoints, encode_expr
from ..regular.not_in import words_of

_lock = threading.Lock()
_TAILS: dict = {}   # (tail expr, limits) -> (trans, accepting) of enc(any char)* . tail, or None
_TAILS_MAX = 256
_SPELLINGS: dict[str, tuple[bytes, ...]] = {}


def not_in_rest_dfa(rest, limits: Limits) -> tuple[np.ndarray, np.ndarray] | None:
    """(trans int32 [S, 256], accepting bool [S]), start 0, of the rest `K tail...` whose
    first item is a registered encoded_not_in(names); None if it is not one or the
    direct construction does not apply."""
    items = rest.items if isinstance(rest, ir.Seq) else (rest,)
    words = words_of(items[0])
    if words is None or any(SURROGATES[0] <= ord(c) <= SURROGATES[1] for w in words for c in w):
        return None
    if items[1:] and ir.rule_refs(ir.Seq(tuple(items[1:]))):
        return None  # a regular rule reference: built with the grammar's rules instead
    g = _tail_dfa(ir.Seq(tuple(items[1:])), limits)
    if g is None:
        return None
    g_trans, g_accepting = g
    tail = ir.Seq(tuple(items[1:]))
    tail_first = FactsCache({}).of(tail).first_bytes() if items[1:] else np.zeros(256, dtype=bool)
    if (tail_first & _char_first_bytes()).any():
        return None  # a byte could end the name or go on in it: left to the subset construction
    return _assemble(words, g_trans, g_accepting, tail_first, limits.max_dfa_states)


def _assemble(words, g_trans, g_accepting, tail_first, max_states: int):
    """Trie states first (root = 0), then G's states shifted by their count."""
    # trie: node -> {char: node}; a state per node and per proper spelling prefix
    children: list[dict] = [{}]
    is_word = [False]
    for w in words:
        node = 0
        for ch in w:
            nxt = children[node].get(ch)
            if nxt is None:
                nxt = len(children)
                children[node][ch] = nxt
                children.append({})
                is_word.append(False)
            node = nxt
        is_word[node] = True
    # states: (kind, node, bytes read of the current character); boundary states first
    states: list[tuple[int, bytes]] = [(n, b"") for n in range(len(children))]
    index = {s: i for i, s in enumerate(states)}
    edges: list[tuple[int, int, tuple]] = []  # (state, byte, target key: ("trie", state) | ("g", bytes))
    for n, kids in enumerate(children):
        for ch, child in kids.items():
            for spelling in _spellings(ch):
                for k in range(len(spelling)):
                    src = (n, spelling[:k])
                    if src not in index:
                        index[src] = len(states)
                        states.append(src)
                    if k + 1 < len(spelling):
                        dst = (n, spelling[:k + 1])
                        if dst not in index:
                            index[dst] = len(states)
                            states.append(dst)
                        edges.append((index[src], spelling[k], index[dst]))
                    else:
                        edges.append((index[src], spelling[k], index[(child, b"")]))
    t = len(states)
    if t + len(g_trans) > max_states:
        return None
    # default rows: where G goes from g0 after the character's bytes read so far
    base = np.empty(t, dtype=np.int64)
    for i, (n, prefix) in enumerate(states):
        q = 0
        for byte in prefix:
            q = int(g_trans[q, byte])
            if q < 0:
                return None  # a child's spelling G cannot read: not the encoding assumed
        base[i] = q
    g_shift = np.where(g_trans >= 0, g_trans + t, -1).astype(np.int32)
    trans = np.empty((t + len(g_trans), 256), dtype=np.int32)
    trans[:t] = g_shift[base]
    trans[t:] = g_shift
    words_at = np.array([is_word[n] for n, _ in states[:len(children)]], dtype=bool)
    # a declared name cannot end here: no tail byte
    trans[np.ix_(np.flatnonzero(words_at), np.flatnonzero(tail_first))] = -1
    moves: dict[tuple[int, int], int] = {}
    for a, b, c in edges:
        if moves.setdefault((a, b), c) != c:
            return None  # one spelling a prefix of another: not a prefix code
    if moves:
        src, byte = (np.array(x, dtype=np.int64) for x in zip(*moves))
        trans[src, byte] = np.array(list(moves.values()), dtype=np.int32)
    accepting = np.zeros(len(trans), dtype=bool)
    accepting[:len(children)] = bool(g_accepting[0]) & ~words_at
    accepting[t:] = g_accepting
    return trans, accepting


def _spellings(ch: str) -> tuple[bytes, ...]:
    """Every JSON text of the character (encode_codepoints' alternatives), as UTF-8."""
    got = _SPELLINGS.get(ch)
    if got is None:
        cls = ir.CharClass.of([(ord(ch), ord(ch))])
        got = tuple(sorted({s.encode("utf-8") for s in _strings(encode_codepoints(cls))}))
        _SPELLINGS[ch] = got
    return got


def _strings(expr) -> list[str]:
    """All strings of a finite expression (a character's spellings: a handful)."""
    if isinstance(expr, ir.Literal):
        return [expr.text]
    if isinstance(expr, ir.CharClass):
        out = [chr(cp) for lo, hi in expr.ranges for cp in range(lo, hi + 1)]
        if len(out) > 64:
            raise ValueError("not a character's spelling")
        return out
    if isinstance(expr, ir.Seq):
        return ["".join(p) for p in itertools.product(*(_strings(i) for i in expr.items))]
    if isinstance(expr, ir.Alt):
        return [s for i in expr.items for s in _strings(i)]
    raise ValueError(f"not a finite expression: {expr!r}")


_CHAR_FIRST: list = []


def _char_first_bytes() -> np.ndarray:
    """bool [256]: the bytes a spelling of some character starts with."""
    if not _CHAR_FIRST:
        dfa = determinize_expr(encode_expr(ANY_CHAR), Limits())
        _CHAR_FIRST.append(dfa.trans[0] >= 0)
    return _CHAR_FIRST[0]


def _tail_dfa(tail: ir.Expr, limits: Limits):
    key = (tail, limits.max_nfa_states, limits.max_dfa_states)
    with _lock:
        if key in _TAILS:
            return _TAILS[key]
    try:
        with gc_paused():
            dfa = determinize_expr(ir.seq(encode_expr(ir.repeat(ANY_CHAR)), tail), limits)
        got = (np.ascontiguousarray(dfa.trans, dtype=np.int32), dfa.accepting)
    except ConstraintError:
        got = None
    with _lock:
        if len(_TAILS) >= _TAILS_MAX:
            _TAILS.clear()
        _TAILS[key] = got
    return got
