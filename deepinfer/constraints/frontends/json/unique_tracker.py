"""`uniqueItems` on top of any token automaton: a wrapper that remembers item values.

Owns `UniqueItemsAutomaton(inner, policy)`, a TokenAutomaton whose state is
(inner state, tracker). The tracker is a small JSON scanner over the emitted
bytes: a stack of open containers, each with the context the `policy` gives it
(which arrays must have distinct items), and for such arrays the canonical
values of the items completed so far plus the raw text of the item in
progress. A byte that completes an item equal to an earlier one (JSON Schema
equality: 1 == 1.0, key order ignored) is refused, so masks drop exactly the
tokens that would complete a duplicate. A `t`, `f` or `n` that starts an item
already fixes its value (true, false, null), so one whose literal is taken is
refused at that first byte: after it the only bytes left would lead to a dead
end (no token, not even EOS). A token after which the item can only be
completed as an earlier item (`"a` when "a" is taken and no longer string is
allowed, or `"ne` when an enum's "neutral" and "negative" are taken) is refused
too (unique_forced.py, which reads each frame's texts of the items written so
far, whitespace removed, as written and with numbers in canonical form); json_arrays builds small
finite item sets in the grammar instead. The inner automaton keeps deciding the syntax and
every other keyword; the tracker assumes its text is JSON.

policy: `root() -> ctx`, `key(ctx, name) -> ctx`, `item(ctx) -> ctx`,
`unique(ctx) -> bool` (contexts are hashable). Knows nothing about schemas.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Hashable

import numpy as np

from .tracked import TrackedAutomaton
from .unique_forced import ZERO_BYTES, Verdicts, dead, squeeze, suspects, token_texts, written_texts, zeros_suspect
from .unique_tokens import SCALAR_BYTES, WS_BYTES, token_sets, zero_ids

_STRING_STOP = re.compile(rb'["\\]')  # what ends a run of a string's plain bytes
_QUOTE_ONLY = frozenset(b'"')
_LITERALS = {ord("t"): "true", ord("f"): "false", ord("n"): "null"}  # an item's first byte -> its value
# modes: V value expected, K key or "}" expected, S in a value string, SK in a key string,
# C ":" expected, A after a value, N in a number or literal
V, K, S, SK, C, A, N = range(7)


def canonical(value) -> str:
    """Equal JSON values (as JSON Schema compares them) give equal keys."""
    def norm(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, float):
            return ("int", int(v)) if v.is_integer() else ("num", repr(v))
        if isinstance(v, list):
            return [norm(x) for x in v]
        return {k: norm(x) for k, x in sorted(v.items())}
    return json.dumps(norm(value), sort_keys=True)


class _Reject(Exception):
    pass


class UniqueItemsAutomaton(TrackedAutomaton):
    """TokenAutomaton: `inner` plus distinct items in the arrays the policy marks unique."""

    def __init__(self, inner, policy) -> None:
        super().__init__(inner)
        self.policy = policy
        self._suspect_sets: dict = {}  # unique_forced.suspects, per tracker position
        self._dead_ends: dict = {}  # unique_forced.dead, per (state, suspect token bytes)
        self._verdicts = Verdicts(None)  # what those searches found, from the state last asked about
        token_texts(self.vocab)  # built once per vocabulary, at compile time (~0.2 s for 129K tokens)
        zero_ids(self.vocab)  # (likewise, ~50 ms)
        # which tokens can end an item or open an array: read-only, once per vocabulary
        self._has, self._opens_ids, self._simple_open = token_sets(self.vocab)

    # ---------------------------------------------------------- protocol
    def initial_state(self) -> Hashable:
        return (self.inner.initial_state(), ((), V, b"", 0))

    def fill_mask(self, state, row: np.ndarray) -> None:
        self.inner.fill_mask(state[0], row)
        tracker = state[1]
        # not inside an array with distinct items: only a token that opens one and has two of its
        # items (`[1,1,`) can be refused
        if any(f[0] == "a" and f[2] for f in tracker[0]):
            bits = np.unpackbits(row.view(np.uint8), bitorder="little")[: self.vocab.size].astype(bool)
            suspects = np.flatnonzero(bits & self._has[self._candidates(tracker)])
        else:  # a few tokens: test their bits, not the whole row (this runs at every other step)
            suspects = self._allowed_among(row, self._opens_ids)
            if suspects.size and not self._opens_unique(tracker):
                suspects = suspects[~self._simple_open[suspects]]
        self._clear_refused(tracker, row, suspects)
        self._clear_forced(state, row)

    def next_state(self, state, token_id: int):
        after = super().next_state(state, token_id)
        data = self.vocab.token_bytes[token_id] or b""
        return None if after is None or self._into_dead_end(state, data, after) else after

    def advance_bytes(self, state, data: bytes):
        after = super().advance_bytes(state, data)
        return None if after is None or self._into_dead_end(state, data, after) else after

    def _into_dead_end(self, state, data: bytes, after) -> bool:
        """A suspect step (unique_forced.py) after which no new item value can be completed."""
        text = squeeze(data)
        if text not in suspects(self._suspect_sets, state[1]) and not (
                text and ZERO_BYTES.issuperset(text) and zeros_suspect(state[1])):
            return False
        # remembered per (state, token bytes): the mask asks it of every suspect token, and the
        # step of the token sampled from that mask asks it again (a parser state compares by
        # identity, so the state before, which the Matcher keeps, is the key; not the one after)
        key = (state, data)
        got = self._dead_ends.get(key)
        if got is None:
            if len(self._dead_ends) >= _MAX_DEAD_ENDS:
                self._dead_ends.clear()
            got = self._dead_ends[key] = dead(self, after, self._verdicts_from(state), data)
        return got

    def _verdicts_from(self, state) -> Verdicts:
        """The searches' shared findings from `state` (kept for the state last asked about: the
        suspect tokens of one mask, then the token sampled from it)."""
        if self._verdicts.before is not state:
            self._verdicts = Verdicts(state)
        return self._verdicts

    def _clear_forced(self, state, row: np.ndarray) -> None:
        """Clear the suspect tokens that lead into a dead end (the same test as the step's)."""
        texts = suspects(self._suspect_sets, state[1])
        zeros = zeros_suspect(state[1])
        if not texts and not zeros:
            return
        by_text = token_texts(self.vocab)
        ids = {tok for text in texts for tok in by_text.get(text, ())}
        if zeros:
            ids.update(zero_ids(self.vocab).tolist())
        ids = sorted(ids)
        allowed = self._allowed_among(row, np.array(ids, dtype=np.int64))
        refused = [tok for tok in allowed.tolist() if self.next_state(state, tok) is None]
        if refused:
            self._clear_ids(row, refused)

    def _opens_unique(self, tracker) -> bool:
        """Whether an array a token opens here, at a value position, must have distinct items.
        Why it is enough outside unique arrays: a token that opens one array and no other
        container (`unique_tokens.opens_one_array`) changes no tracked frame unless that array is unique
        (items, literals, closings and `_done` only touch unique arrays), and in any other mode
        its `[` is string text or no value start. Saves scanning ~100 tokens (~15 us each) at
        every value position of a schema with uniqueItems anywhere."""
        return tracker[1] == V and bool(self.policy.unique(self._child(tracker[0])))

    def _candidates(self, tracker) -> str:
        """Which tokens can complete a duplicate item from here (a cheap superset)."""
        stack, mode, _, esc = tracker
        if all(not f[3] for f in stack if f[0] == "a" and f[2]):
            return "two_ends"  # nothing seen yet: a duplicate needs two items in one token
        top = stack[-1]
        if top[0] != "a" or not top[2]:
            return "bracket"  # an item of an outer array completes only once this one closes
        if mode == V:
            return "from_value"
        if mode == S and not esc and top[4] is not None:
            # a string item can only equal a seen string that starts with what it has so far
            try:
                prefix = json.loads(top[4] + b'"')
            except ValueError:
                return "quote"
            if not any(isinstance(v, str) and v.startswith(prefix) for v in map(json.loads, top[3])):
                return "two_ends"  # only by closing it and completing a second item
            return "quote"
        return "quote" if mode in (S, SK) else "term"

    # ----------------------------------------------------------- tracker
    def _scan(self, tracker, data: bytes):
        stack, mode, buf, esc = tracker
        stack = list(stack)
        i, n = 0, len(data)
        try:
            while i < n:
                if (mode == S or mode == SK) and not esc:  # a string's plain bytes at once
                    stop = _STRING_STOP.search(data, i)
                    end = n if stop is None else stop.start()
                    if end > i:
                        _append(stack, data[i:end])
                        buf = buf + data[i:end] if mode == SK else buf
                        i = end
                        continue
                mode, buf, esc = self._byte(stack, mode, buf, esc, data[i])
                i += 1
        except _Reject:
            return None
        return (tuple(stack), mode, buf, esc)

    def _byte(self, stack: list, mode: int, buf: bytes, esc: int, c: int):
        if mode == N:
            if c in SCALAR_BYTES:
                _append(stack, c)
                return N, buf, 0
            self._done(stack)
            mode = A
        if mode in (S, SK):
            _append(stack, c)
            if esc:
                return mode, (buf + bytes([c]) if mode == SK else buf), 0
            if c == 0x5C:  # backslash
                return mode, (buf + b"\\" if mode == SK else buf), 1
            if c != 0x22:
                return mode, (buf + bytes([c]) if mode == SK else buf), 0
            if mode == SK:
                key = json.loads(b'"' + buf + b'"')
                kind, ctx, _ = stack[-1]
                stack[-1] = (kind, ctx, key)
                return C, b"", 0
            self._done(stack)
            return A, b"", 0
        if c in WS_BYTES:
            _append(stack, c)
            return mode, buf, esc
        if mode == V and c != ord("]"):
            self._start_item(stack)
            _append(stack, c)
            if c in _LITERALS:
                self._taken(stack, _LITERALS[c])
            if c == ord("{"):
                stack.append(("o", self._child(stack), None))
                return K, b"", 0
            if c == ord("["):
                ctx = self._child(stack)
                stack.append(("a", ctx, self.policy.unique(ctx), frozenset(), None, frozenset()))
                return V, b"", 0
            if c == 0x22:
                return S, b"", 0
            return N, b"", 0
        _append(stack, c)
        if mode == K:
            if c == 0x22:
                return SK, b"", 0
            # "}" of an empty object
        elif mode == C:
            return V, b"", 0  # ":"
        if c == ord(","):
            return (K if stack and stack[-1][0] == "o" else V), b"", 0
        if c in (ord("]"), ord("}")) and stack:
            stack.pop()
            self._done(stack)
            return A, b"", 0
        return mode, buf, esc

    def _child(self, stack: list):
        if not stack:
            return self.policy.root()
        top = stack[-1]
        if top[0] == "o":
            return self.policy.key(top[1], top[2])
        return self.policy.item(top[1])

    @staticmethod
    def _start_item(stack: list) -> None:
        if stack and stack[-1][0] == "a" and stack[-1][2]:
            stack[-1] = stack[-1][:4] + (b"", stack[-1][5])

    @staticmethod
    def _taken(stack: list, literal: str) -> None:
        """An item that a literal starts: refused now if an earlier item has its value, since every
        byte after this one would only lead to the duplicate."""
        if stack and stack[-1][0] == "a" and stack[-1][2] and canonical(json.loads(literal)) in stack[-1][3]:
            raise _Reject()

    @staticmethod
    def _done(stack: list) -> None:
        """The value at the top of the stack is complete: check it against earlier items."""
        if not stack or stack[-1][0] != "a" or not stack[-1][2] or stack[-1][4] is None:
            return
        kind, ctx, unique, seen, cur, written = stack[-1]
        key = _item_key(cur)
        if key is None:
            return  # not JSON the scanner understands: the inner automaton decides
        if key in seen:
            raise _Reject()
        stack[-1] = (kind, ctx, unique, seen | {key}, None, written | written_texts(cur))


@lru_cache(maxsize=1 << 16)
def _item_key(text: bytes) -> str | None:
    """canonical() of an item's JSON text, None if it does not parse. Cached: a mask step
    scans every token that could complete an item (~100), and the same completions come
    back at the next item of the array."""
    try:
        return canonical(json.loads(text))
    except ValueError:
        return None


_MAX_DEAD_ENDS = 4096  # dead-end verdicts kept (each holds a state: a parser's may hold its chart)



def _append(stack: list, c: int | bytes) -> None:
    """Add a byte (or bytes) to every item in progress (the innermost items of unique arrays
    and their enclosing items)."""
    data = bytes([c]) if isinstance(c, int) else c
    for i, f in enumerate(stack):
        if f[0] == "a" and f[2] and f[4] is not None:
            stack[i] = (f[0], f[1], f[2], f[3], f[4] + data, f[5])


Policy = Any
