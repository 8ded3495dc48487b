"""Long `maxLength` caps on top of any token automaton: a wrapper that counts characters.

A string of at most N characters needs about N automaton states per character class
(UTF-8 lead bytes, escapes); past a few thousand that is more than a lexeme DFA may
hold. The grammar then lets such a string run unbounded, and `LengthCapAutomaton(inner,
policy)` counts the characters of every value string the policy caps, refusing a token
that would write character N + 1. Characters are code points, as JSON Schema counts
them: every byte that is not a UTF-8 continuation byte, and each escape (`\\n`,
`\\u00e9`) once; the grammar writes no surrogate escapes in a capped string.

Exactness: the inner mask is exact for the unbounded string; the wrapper removes exactly
the tokens that put more than N characters into a capped string. What is left can always
finish, because the policy only caps places where every string the grammar can write
may close after any of its prefixes of at least its minLength (<= N) characters
(json_caps checks that when it builds the policy).

The tracker is a small JSON scanner over the emitted bytes: a stack of open containers
with their policy contexts, the mode, and in a capped string its count and escape state.
policy: `root() -> ctx`, `key(ctx, name) -> ctx`, `item(ctx) -> ctx`, `cap(ctx) -> int |
None` (contexts hashable), `smallest_cap` (no cap is below it). Knows nothing about schemas.
"""

from __future__ import annotations

import json
import re
from typing import Hashable

import numpy as np

from ...regular.mask_bits import pack_mask
from .tracked import TrackedAutomaton

_WS = frozenset(b" \t\n\r")
_SCALAR = frozenset(b"0123456789+-.eEtruefalsn")
_STRING_STOP = re.compile(rb'["\\]')
_CONTINUATION = bytes(range(0x80, 0xC0))
# modes: V value expected, K key or "}" expected, SK in a key string, C ":" expected,
# A after a value, S in a value string, N in a number or literal
V, K, SK, C, A, S, N = range(7)
# escape state inside a string: 0 plain, 1 after a backslash, 2..5 = 4..1 hex digits to read
PLAIN, ESCAPE = 0, 1
_ESCAPE_STATES = 6
_CACHE_ROWS = 1024  # packed "at most r more characters" rows kept per vocabulary (16 KB each)


class _Refuse(Exception):
    pass


class LengthCapAutomaton(TrackedAutomaton):
    """TokenAutomaton: `inner` plus at most cap(ctx) characters in the strings the policy caps."""

    def __init__(self, inner, policy) -> None:
        super().__init__(inner)
        self.policy = policy
        longest, after_quote = _vocab_lengths(self.vocab)
        self._longest = longest
        # a token with more bytes after a quote than the smallest cap could open a string and
        # overrun it within the token (the room rows count only the string being written): such
        # tokens (none in common vocabularies) are tested one by one
        self._overlong = np.flatnonzero(after_quote > policy.smallest_cap)

    # ---------------------------------------------------------- protocol
    def initial_state(self) -> Hashable:
        # tracker: (stack, mode, cap of the string being written or None, count, escape, key bytes)
        return (self.inner.initial_state(), ((), V, None, 0, PLAIN, b""))

    def fill_mask(self, state, row: np.ndarray) -> None:
        self.inner.fill_mask(state[0], row)
        tracker = state[1]
        _, mode, cap, count, escape, _ = tracker
        if mode == S and cap is not None and cap - count < self._longest:  # tokens have no more
            np.bitwise_and(row, _room_row(self.vocab, escape, cap - count), out=row)  # chars than bytes
        if self._overlong.size:
            self._clear_refused(tracker, row, self._allowed_among(row, self._overlong))

    # ----------------------------------------------------------- tracker
    def _scan(self, tracker, data: bytes):
        stack, mode, cap, count, escape, key = tracker
        stack = list(stack)
        i, n = 0, len(data)
        try:
            while i < n:
                if mode == S or mode == SK:
                    i, mode, count, escape, key = self._string(stack, data, i, mode, cap, count, escape, key)
                    continue
                mode, cap, key = self._byte(stack, mode, data[i], key)
                count, escape = 0, PLAIN
                i += 1
        except _Refuse:
            return None
        return (tuple(stack), mode, cap, count, escape, key)

    def _string(self, stack, data: bytes, i: int, mode: int, cap, count: int, escape: int, key: bytes):
        """Read string bytes from data[i]: (next index, mode, count, escape, key bytes)."""
        if escape == PLAIN:
            stop = _STRING_STOP.search(data, i)
            end = len(data) if stop is None else stop.start()
            if end > i:
                run = data[i:end]
                if mode == SK:
                    key += run
                elif cap is not None:
                    count += len(run.translate(None, _CONTINUATION))
                    if count > cap:
                        raise _Refuse()
                return end, mode, count, escape, key
            c = data[i]
            if c == 0x22:  # the closing quote
                if mode == SK:
                    name = json.loads(b'"' + key + b'"')
                    kind, ctx, _ = stack[-1]
                    stack[-1] = (kind, ctx, name)
                    return i + 1, C, 0, PLAIN, b""
                return i + 1, A, 0, PLAIN, b""
            # a backslash: one more character
            if mode == SK:
                key += b"\\"
            elif cap is not None:
                count += 1
                if count > cap:
                    raise _Refuse()
            return i + 1, mode, count, ESCAPE, key
        c = data[i]
        if mode == SK:
            key += bytes([c])
        if escape == ESCAPE:
            escape = 2 if c == ord("u") else PLAIN
        else:
            escape = escape + 1 if escape < 5 else PLAIN
        return i + 1, mode, count, escape, key

    def _byte(self, stack: list, mode: int, c: int, key: bytes):
        """One byte outside strings: (mode, cap of a string it opens, key bytes)."""
        if mode == N:
            if c in _SCALAR:
                return N, None, key
            mode = A
        if c in _WS:
            return mode, None, key
        if mode == V and c != ord("]"):
            ctx = self._child(stack)
            if c == ord("{"):
                stack.append(("o", ctx, None))
                return K, None, b""
            if c == ord("["):
                stack.append(("a", ctx, None))
                return V, None, b""
            if c == 0x22:
                return S, self.policy.cap(ctx), b""
            return N, None, key
        if mode == K and c == 0x22:
            return SK, None, b""
        if mode == C:
            return V, None, key  # ":"
        if c == ord(","):
            return (K if stack and stack[-1][0] == "o" else V), None, key
        if c in (ord("]"), ord("}")) and stack:
            stack.pop()
            return A, None, key
        return mode, None, key

    def _child(self, stack: list):
        if not stack:
            return self.policy.root()
        kind, ctx, name = stack[-1]
        return self.policy.key(ctx, name) if kind == "o" else self.policy.item(ctx)


def _vocab_lengths(vocab) -> tuple[int, np.ndarray]:
    """(the longest token's bytes, int32 [V] bytes after each token's first quote or -1),
    cached per vocabulary (a pass over every token: not once per compile)."""
    got = vocab.mask_cache.get("length_caps_lengths")
    if got is None:
        after = np.array([len(t) - t.index(b'"') - 1 if t is not None and b'"' in t else -1
                          for t in vocab.token_bytes], dtype=np.int32)
        longest = max((len(t) for t in vocab.token_bytes if t is not None), default=0)
        got = vocab.mask_cache["length_caps_lengths"] = (longest, after)
    return got


def _room_row(vocab, escape: int, room: int) -> np.ndarray:
    """int32 [words]: every token but those that add more than `room` characters to a string,
    read from escape state `escape` (packed; cached per vocabulary: few tokens have many
    characters, so most rows are a sparse pack)."""
    rows = vocab.mask_cache.setdefault("length_caps", {})
    got = rows.get((escape, room))
    if got is None:
        order, counts = _by_count(vocab, escape)
        too_long = order[: int(np.searchsorted(-counts, -room, side="left"))]  # counts > room
        if len(rows) >= _CACHE_ROWS:
            rows.clear()
        got = rows[(escape, room)] = ~pack_mask(too_long, vocab)
        got.flags.writeable = False
    return got


def _by_count(vocab, escape: int) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, their character counts), most characters first (cached per vocabulary)."""
    key = ("length_caps_counts", escape)
    got = vocab.mask_cache.get(key)
    if got is None:
        counts = np.zeros(vocab.size, dtype=np.int32)
        counts[vocab.sorted_ids] = char_counts(vocab.sorted_bytes_T, vocab.sorted_lengths, escape)
        order = np.argsort(-counts, kind="stable")
        got = vocab.mask_cache[key] = (order, counts[order])
    return got


def char_counts(columns: np.ndarray, lengths: np.ndarray, escape: int) -> np.ndarray:
    """int32 [n]: characters each of n tokens adds to a string before its closing quote, read
    from escape state `escape`. columns: uint8 [width, n], byte j of every token (0-padded).
    One vectorized step per byte position over the tokens that long (few are long)."""
    n = lengths.shape[0]
    counts = np.zeros(n, dtype=np.int32)
    state = np.full(n, escape, dtype=np.int8)  # -1 once the string has closed
    for j in range(columns.shape[0]):
        live = np.flatnonzero((lengths > j) & (state >= 0))
        if not live.size:
            break
        b, st = columns[j].take(live), state.take(live)
        plain = st == PLAIN
        counts[live] += (plain & (b != 0x22) & ((b & 0xC0) != 0x80)).astype(np.int32)
        nxt = np.where(st == ESCAPE, np.where(b == ord("u"), 2, PLAIN), np.where(st >= 5, PLAIN, st + 1))
        nxt = np.where(plain, np.where(b == 0x22, -1, np.where(b == 0x5C, ESCAPE, PLAIN)), nxt)
        state[live] = nxt
    return counts
