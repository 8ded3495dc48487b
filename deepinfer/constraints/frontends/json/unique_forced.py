"""Dead ends of unique arrays: an item whose every completion is an earlier item's value.

Why: unique_tracker.py refuses the byte that *completes* a duplicate (a string's closing quote, an
object's `}`, the `,` after a number). When nothing else can come at that point (a `date` or
`uuid` after its last digit, a string at its `maxLength`, `{"id": 1` with no other member
allowed, `10` under `maximum: 10`, `{"s": "ne` when the enum's "neutral" and "negative" are both
taken), refusing only that byte left a dead end: no token at all, not even EOS. Here the token
that leads into such a point is refused instead.

A token is *suspect* when its bytes, whitespace removed, continue the item in progress (or
start one) along the text of an earlier item of the same array, compared as written and with
numbers in canonical form (`normalized`: `12.500` is `12.5`), whitespace removed:
`suspects(tracker)` lists those texts once per tracker position; a token of only `0`s keeps a
number at the value it had (`zeros_suspect`). After a suspect,
`dead(wrapper, state)` searches the continuations the inner automaton and the tracker allow,
as long as they lead along earlier items' texts: the state is a dead end when every one of them
ends in a refused duplicate. The search is complete (finite item sets and finite tails, however
many choices deep) up to SEARCH_STEPS byte tries. The step refuses a suspect token that leads
into a dead end, and the mask tests exactly the suspect tokens it allows, so the two agree.
Items written differently from the earlier one in other ways (escapes, a number in another
spelling such as `1.25e1` for `12.5`), and searches past SEARCH_STEPS, are taken as a way out:
those can still end in a dead end, never in an invalid output. So can a token that completes an
item and starts the next (`","`), which is not a suspect: where the item set is finite, the count
arrays.py caps `maxItems` at keeps such a token out once every value is taken; an item set
finite but not counted there (`{"maxLength": 1, "pattern": "^[ab]*$"}`) is not covered.

Reads unique_tracker.py's tracker layout (frames ("a", ctx, unique, seen, item text, written texts);
modes); knows nothing about schemas.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np

from deepinfer.constraints import deadline as compile_deadline
from .tracked import TrackedAutomaton

_WS = b" \t\n\r"
_WS_SET = frozenset(_WS)
_BYTES = [bytes([b]) for b in range(256)]
V, K, S, SK, C, A, N = range(7)  # unique_tracker.py's tracker modes
NEAR = 4  # an item this many bytes or fewer from an earlier item's end: a whitespace token may end it
SEARCH_STEPS = 4096  # byte tries one `dead` search may spend (~5 ms) before it answers "a way out"
_MAX_SUSPECT_SETS = 4096
MAX_TOKEN_TEXT = 48  # suspects: tokens up to this many bytes (longer ones are not checked)


def squeeze(raw: bytes) -> bytes:
    """The text without whitespace bytes (how items' texts are compared)."""
    return raw.translate(None, _WS)


_NUMBER_START = frozenset(b"-0123456789")
_NUMBER_BYTES = frozenset(b"-+0123456789.eE")
ZERO_BYTES = frozenset(b"0eE+-")  # what a token may hold and leave a number's value as it was


def written_texts(raw: bytes) -> frozenset:
    """A completed item's texts as earlier items' texts are kept: whitespace removed, as written
    and with its numbers in canonical form (`normalized`): an item in progress is compared as
    written with the one, in canonical form with the other (`_done_texts`)."""
    text = squeeze(raw)
    done, ended = normalized(text)
    return frozenset((text, done if ended is None else ended))


@lru_cache(maxsize=1 << 14)
def normalized(text: bytes) -> tuple[bytes, bytes | None]:
    """(the whitespace-free `text` with its numbers in canonical form, except one at its end,
    written as it is; the same with that one in canonical form too, or None when the text does
    not end in a number). Why: numbers written differently are equal items (`12.50`, `12.500`
    and `1.25e1` are one value), and compared as written they did not look like a duplicate in
    the making: a model that wrote `12.500` after an item with `12.50` then had only the
    duplicate's `}` left. Strings are kept as written (an escape is not decoded)."""
    out, i, n, in_string = bytearray(), 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == 0x5C and i + 1 < n:  # an escape: its next byte is text too
                out.append(text[i + 1])
                i += 1
            elif c == 0x22:
                in_string = False
        elif c in _NUMBER_START:
            j = i + 1
            while j < n and text[j] in _NUMBER_BYTES:
                j += 1
            number = text[i:j]
            if j == n:  # the number may still go on
                return bytes(out + number), _with_number(out, number)
            out += _canonical_number(number) or number
            i = j
            continue
        else:
            out.append(c)
            in_string = c == 0x22
        i += 1
    return bytes(out), None


def _with_number(head: bytearray, number: bytes) -> bytes | None:
    canonical = _canonical_number(number)
    return None if canonical is None else bytes(head + canonical)


def _canonical_number(number: bytes) -> bytes | None:
    """One text per JSON Schema number value (as unique_tracker.canonical compares them: an
    integral float is that integer), or None for a text that is no number yet (`1.`, `2e`)."""
    try:
        value = json.loads(number)
    except ValueError:
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if not value.is_integer():
            return repr(value).encode()
        value = int(value)
    return str(value).encode() if isinstance(value, int) else None


def suspects(cache: dict, tracker) -> frozenset:
    """Whitespace-free texts a suspect token may have from this tracker (b"" for whitespace):
    the prefixes of the rest of each earlier item's text that the item in progress (or one the
    token starts) leads along, up to MAX_TOKEN_TEXT bytes and the last NEAR + 1 of them."""
    stack, mode = tracker[0], tracker[1]
    keys = _suspect_keys(stack, mode)
    if not keys:
        return frozenset()
    got = cache.get(keys)
    if got is None:
        texts: set[bytes] = set()
        for done, written, lead in keys:
            for text in written:
                if text.startswith(done) and len(text) > len(done):
                    rest = text[len(done):]
                    if done and len(rest) <= NEAR:
                        texts.add(b"")  # whitespace: the end of a number, a second run inside `[ ]`
                    first = 0 if lead else 1
                    ends = set(range(first, min(len(rest), first + MAX_TOKEN_TEXT) + 1))
                    ends.update(range(max(len(rest) - NEAR, first), len(rest) + 1))
                    texts.update(lead + rest[:k] for k in ends)
        if len(cache) >= _MAX_SUSPECT_SETS:
            cache.clear()
        got = cache[keys] = frozenset(texts)
    return got


def _suspect_keys(stack, mode) -> tuple:
    """(item text so far, earlier items' texts, separator a new item needs first) for the item
    in progress and for one the next token may start (after `[` or an item of the top array)."""
    keys = []
    top = stack[-1] if stack else None
    if top is not None and top[0] == "a" and top[2] and top[4] is None and top[5] and mode in (V, A):
        keys.append((b"", top[5], b"" if mode == V else b","))
    for at in _open_items(stack):
        keys.extend((done, stack[at][5], b"") for done in _done_texts(stack[at][4]))
    if top is not None and top[0] == "a" and top[2] and top[4] is not None and mode == N:
        # a number or literal item: a `,` ends it (one more earlier item) and starts the next
        keys.append((b"", top[5] | written_texts(top[4]), b","))
    return tuple(keys)


@lru_cache(maxsize=1 << 14)
def _done_texts(raw: bytes) -> tuple[bytes, ...]:
    """The item in progress as compared with earlier items' texts (`written_texts`): as written,
    and `normalized`, with a number at its end as written and, where it could end there, as the
    value it would have (whitespace removed from all)."""
    text = squeeze(raw)
    return tuple(dict.fromkeys(t for t in (text, *normalized(text)) if t is not None))


def zeros_suspect(tracker) -> bool:
    """In a number that, ended now, leads along an earlier item's text: a token of only `0`s (or
    an exponent of them) keeps that value (`12.50` -> `12.500`), so it is a suspect too."""
    if tracker[1] != N:
        return False
    stack = tracker[0]
    for at in _open_items(stack):
        ended = normalized(squeeze(stack[at][4]))[1]
        if ended is not None and any(t.startswith(ended) for t in stack[at][5]):
            return True
    return False


class Verdicts:
    """What `dead` searches found from one state before a token (the state the mask is made
    for), by the text written after it: `dead` texts lead into dead ends, `alive` ones have a
    new value in reach. Facts about one state and a text, so the searches for the suspect
    tokens of one mask share them (they walk the same earlier items' texts). Texts are kept as
    written: whitespace that looks alike is not (`[\n` then `\n` starts the gap before `]` in the
    default whitespace, where `[ ` then `\n` is the same gap)."""

    __slots__ = ("before", "dead", "alive")

    def __init__(self, before) -> None:
        self.before = before
        self.dead: set[bytes] = set()
        self.alive: set[bytes] = set()


def dead(wrapper, state, verdicts: Verdicts | None = None, text: bytes = b"") -> bool:
    """True when no completion of the items in progress, or of one about to start, is a new
    value: a depth-first search over the bytes the inner automaton and the tracker allow, kept
    to the items' texts that lead along an earlier item's (any other byte makes the item differ
    from every earlier one: a way out). Forced bytes are followed in one step, whitespace outside
    strings is skipped (the grammar never requires it, and it changes no value). Complete for
    every finite continuation, however many choices deep (an enum member of values sharing a
    prefix, `"ne` when "neutral" and "negative" are both taken); past SEARCH_STEPS byte tries it
    answers False (unknown, taken as a way out, and not kept). `verdicts` and `text`: what
    earlier searches from the same state before found, and the text from there to `state`."""
    if not _in_view(state[1]):
        return False  # the item differs from every earlier one already, or none is in view
    known = verdicts if verdicts is not None else Verdicts(None)
    first = _Node.enter(wrapper, known, state, text, ())
    if first is _Node.DEAD or first is _Node.ALIVE:
        return first is _Node.DEAD
    steps, todo, seen = SEARCH_STEPS, [first], list(first.path)
    while todo:
        node = todo.pop()
        (inner, tracker), at = node.state, node.text
        for b in _ordered_bytes(wrapper, inner, tracker):
            steps -= 1
            if steps < 0:
                return False  # undecided within the search's budget: taken as a way out (not kept)
            data = _BYTES[b]
            after = wrapper.inner.advance_bytes(inner, data)  # first: the tracker assumes JSON text
            if after is None:
                continue
            after_tracker = wrapper._scan(tracker, data)
            if after_tracker is None:
                continue  # completes a duplicate
            child = _Node.enter(wrapper, known, (after, after_tracker), at + data, node.path)
            if child is _Node.ALIVE:
                return False
            if child is not _Node.DEAD:
                seen.extend(child.path[len(node.path):])
                todo.append(child)
    known.dead.update(seen)  # the search ended without a way out: every state it met is dead
    return True


class _Node:
    """A state the search met: after the bytes forced there, with its text from the state
    before and the texts of the states on its way from the search's start (alive if it is)."""

    __slots__ = ("state", "text", "path")
    DEAD, ALIVE = object(), object()

    def __init__(self, state, text: bytes, path: tuple) -> None:
        self.state, self.text, self.path = state, text, path

    @classmethod
    def enter(cls, wrapper, known: Verdicts, state, text: bytes, path: tuple):
        """DEAD (a dead end or one already known), ALIVE (a way out: the verdict is kept for
        every state on the way), or the node to search from (after its forced bytes)."""
        if text in known.dead:
            return cls.DEAD
        if text in known.alive or not _in_view(state[1]):
            known.alive.update(path + (text,))
            return cls.ALIVE
        settled = _settle(wrapper, state, text)
        if settled is None or settled[1] in known.dead:
            known.dead.add(text)  # (only this state: it has no other way on)
            return cls.DEAD
        state, after = settled
        path = path + (text,) if after == text else path + (text, after)
        if after != text and (after in known.alive or not _in_view(state[1])):
            known.alive.update(path)
            return cls.ALIVE
        return cls(state, after, path)


def _settle(wrapper, state, text: bytes):
    """(state, text) after the bytes the inner automaton forces from `state` (no choice to make
    there), or None when they complete a duplicate."""
    inner, tracker = state
    forced = wrapper.inner.forced_bytes(inner)
    if not forced:
        return state, text
    after_tracker = wrapper._scan(tracker, forced)
    if after_tracker is None:
        return None
    after = wrapper.inner.advance_bytes(inner, forced)
    return None if after is None else ((after, after_tracker), text + forced)


def _in_view(tracker) -> bool:
    """Whether a duplicate is still in view: an item in progress leads along an earlier item's
    text, or an item of a unique array with earlier items is about to start."""
    stack, mode = tracker[0], tracker[1]
    if mode == V and stack and stack[-1][0] == "a" and stack[-1][2] and stack[-1][5]:
        return True
    return any(_along(stack[at]) for at in _open_items(stack))


def _ordered_bytes(wrapper, inner, tracker) -> list[int]:
    """The bytes to try next: those the back end may take (`live_bytes`), whitespace outside
    strings left out, the ones leading along an earlier item's text last (any other byte that
    goes on ends the search at once)."""
    stack, mode = tracker[0], tracker[1]
    # inside a string a space is text (but compared without, as every whitespace byte): one at
    # a time, so that a run of them cannot keep the search going
    spaces = mode in (S, SK) and not _last_byte_space(stack)
    along = _next_along(stack, mode)
    first, last = [], []
    for b in live_bytes(wrapper.inner, inner):
        if b in _WS_SET and not spaces:
            continue
        (last if b in along or b in _WS_SET else first).append(b)
    return first + last


def _last_byte_space(stack) -> bool:
    """The last byte written into the innermost item in progress is whitespace."""
    items = _open_items(stack)
    return bool(items) and stack[items[0]][4][-1:] in (b" ", b"\t", b"\n", b"\r")


def _next_along(stack, mode) -> set[int]:
    """Bytes that continue an item in progress (or start one) along an earlier item's text."""
    out: set[int] = set()
    top = stack[-1] if stack else None
    if mode == V and top is not None and top[0] == "a" and top[2] and top[4] is None:
        out.update(t[0] for t in top[5] if t)
    for at in _open_items(stack):
        for done in _done_texts(stack[at][4]):
            out.update(t[len(done)] for t in stack[at][5] if len(t) > len(done) and t.startswith(done))
    return out


def live_bytes(automaton, state) -> range | list[int]:
    """A superset of the bytes `automaton` may take next from `state`, read off the back end
    under the trackers (a DFA row, a parser's threads); every byte where it cannot tell. Why:
    trying all 256 bytes through the trackers costs ~100 us where a byte or two go on."""

    while isinstance(automaton, TrackedAutomaton):
        automaton, state = automaton.inner, state[0]
    dfa = getattr(automaton, "dfa", None)
    if dfa is not None and isinstance(state, int):
        return np.flatnonzero(dfa.trans[state] >= 0).tolist()
    threads, live = getattr(state, "threads", None), getattr(automaton, "_live_bytes", None)
    if threads is not None and live is not None:
        return sorted({b for lex, _, q in threads for b in live(lex, q)})
    return range(256)


def _open_items(stack) -> list[int]:
    """Indices of the unique array frames with an item in progress and earlier items, innermost
    first (an inner item does not hide an outer one that repeats an earlier item)."""
    return [i for i in range(len(stack) - 1, -1, -1)
            if stack[i][0] == "a" and stack[i][2] and stack[i][4] is not None and stack[i][5]]


def _along(frame) -> bool:
    """The item in progress (`_done_texts`) is a prefix of an earlier item's text."""
    return any(t.startswith(done) for done in _done_texts(frame[4]) for t in frame[5])


def token_texts(vocab) -> dict[bytes, list[int]]:
    """Whitespace-free token bytes -> token ids (cached on the vocabulary)."""
    got = vocab.mask_cache.get("unique_squeezed_ids")
    if got is None:
        got = {}
        for i, data in enumerate(vocab.token_bytes):
            if data:
                got.setdefault(squeeze(data), []).append(i)
            if i & 16383 == 0:
                compile_deadline.check()  # ~0.2 s in all: a time-limited compile stops here
        vocab.mask_cache["unique_squeezed_ids"] = got
    return got
