"""Which tokens of a vocabulary the `uniqueItems` tracker must scan: per-vocabulary token classes.

Owns `token_sets(vocab)` (bool [V] per kind of token the tracker can refuse from some state:
one with a quote, a terminator, two item ends, a bracket, or one that completes a whole value),
`zero_ids(vocab)` (tokens that can leave a number's value unchanged) and `opens_one_array`. The
tracker (unique_tracker.py) scans only the tokens a state's class holds: every other token is
allowed or refused by the inner automaton alone. Computed once per vocabulary, checking the
compile's deadline between chunks, and cached on it. Knows nothing about schemas or states.
"""

from __future__ import annotations

import re

import numpy as np

from deepinfer.constraints import deadline as compile_deadline

from .unique_forced import ZERO_BYTES, squeeze

WS_BYTES = frozenset(b" \t\n\r")
SCALAR_BYTES = frozenset(b"0123456789+-.eEtruefalsn")   # bytes a number or literal goes on with
_CLOSERS = frozenset(b'",]}') | WS_BYTES   # bytes that can end an item
_COMMA_LITERAL = re.compile(rb",[ \t\n\r]*[tfn]")  # a new item that a literal starts
_FROM_VALUE: dict = {}


def token_sets(vocab) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """(bool [V] per kind of token the tracker refuses from some state, int64 [k] ids of tokens
    that close an item and open an array, bool [V] those that open one array and nothing else);
    computed once per vocabulary (~0.3 s for 129K tokens, once paid by every unique-items
    compile) and shared read-only."""
    got = vocab.mask_cache.get("unique_token_sets")
    if got is not None:
        return got
    tokens = vocab.token_bytes
    # a token is refused where it completes a duplicate or starts a taken literal: each set
    # below holds every token that can do so from some tracker state (_candidates)
    two_ends = _per_token(tokens, lambda t: sum(b in _CLOSERS for b in t) >= 2
                          or _COMMA_LITERAL.search(t) is not None)  # two items in one token, or an item then a literal
    has = {
        "quote": _per_token(tokens, lambda t: b'"' in t),
        "term": _per_token(tokens, lambda t: any(b in _CLOSERS for b in t)),
        "two_ends": two_ends,
        # out of an inner container (`]`/`}`), or two items in a new one
        "bracket": _per_token(tokens, lambda t: b"]" in t or b"}" in t) | two_ends,
    }
    opens_ids = np.flatnonzero(two_ends & _per_token(tokens, lambda t: b"[" in t))
    # opening tokens that start an array (after whitespace) and open nothing else: outside every
    # unique array, one can be refused only if that new array is unique (_opens_unique)
    simple_open = np.zeros(len(tokens), dtype=bool)
    simple_open[opens_ids] = [opens_one_array(tokens[i]) for i in opens_ids.tolist()]
    starts_literal = _per_token(tokens, lambda t: t.lstrip(b" \t\n\r")[:1] in (b"t", b"f", b"n"))
    has["from_value"] = _completes_from_value(vocab) | has["bracket"] | starts_literal
    got = vocab.mask_cache["unique_token_sets"] = (has, opens_ids, simple_open)
    return got


def zero_ids(vocab) -> np.ndarray:
    """int64 ids of the tokens made of ZERO_BYTES only, whitespace aside (cached on the vocabulary)."""
    got = vocab.mask_cache.get("unique_zero_ids")
    if got is None:
        zeros = _per_token(vocab.token_bytes, lambda t: bool(squeeze(t)) and ZERO_BYTES.issuperset(squeeze(t)))
        got = vocab.mask_cache["unique_zero_ids"] = np.flatnonzero(zeros).astype(np.int64)
    return got


def _per_token(tokens: list, test, chunk: int = 8192) -> np.ndarray:
    """bool [V]: test(bytes) per text token (False for None), a chunk of tokens at a time with
    the compile's deadline checked between chunks (a pass over 129K tokens is ~50-100 ms)."""
    out = np.zeros(len(tokens), dtype=bool)
    for lo in range(0, len(tokens), chunk):
        compile_deadline.check()
        out[lo:lo + chunk] = [t is not None and bool(test(t)) for t in tokens[lo:lo + chunk]]
    return out


def _completes_from_value(vocab) -> np.ndarray:
    """bool [V]: the token, read where a value starts, completes a whole value (cached)."""
    got = _FROM_VALUE.get(id(vocab))
    if got is None or len(got) != vocab.size:
        got = _per_token(vocab.token_bytes, _value_ends)
        _FROM_VALUE[id(vocab)] = got
    return got


def _value_ends(data: bytes) -> bool:
    depth, in_str, esc, started, scalar = 0, False, False, False, False
    for c in data:
        if in_str:
            if esc:
                esc = False
            elif c == 0x5C:
                esc = True
            elif c == 0x22:
                in_str = False
                if depth == 0:
                    return True
        elif scalar:
            if c not in SCALAR_BYTES:
                return True
        elif c == 0x22:
            in_str, started = True, True
        elif c in b"[{":
            depth, started = depth + 1, True
        elif c in b"]}":
            depth -= 1
            if depth <= 0:
                return True
        elif c in WS_BYTES or (started and depth > 0):
            continue
        else:
            scalar, started = True, True
    return False


def opens_one_array(data: bytes) -> bool:
    """Whitespace, then `[`, then no other `[` or `{` (see _opens_unique)."""
    rest = data.lstrip(b" \t\n\r")
    return rest[:1] == b"[" and b"[" not in rest[1:] and b"{" not in rest
