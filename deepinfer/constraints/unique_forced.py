"""Dead ends of unique arrays: an item whose every completion is an earlier item's value.

Why: unique.py refuses the byte that *completes* a duplicate (a string's closing quote, an
object's `}`, the `,` after a number). When nothing else can come at that point (a `date` or
`uuid` after its last digit, a string at its `maxLength`, `{"id": 1` with no other member
allowed, `10` under `maximum: 10`), refusing only that byte left a dead end: no token at all,
not even EOS. Here the token that leads into such a point is refused instead.

`dead_item(automaton, state)`: after a token, the item in progress (of the innermost unique
array) is read as if closed now: its text so far, plus the bytes the inner automaton forces
up to a string's closing quote, plus the brackets that close what the item opened. If that
text, whitespace removed, is the written text of an earlier item, every non-whitespace byte
that could come next is tried (in the inner automaton and the tracker): none left means the
state is a dead end. Only earlier items written the same way (same member order, same number
spelling) are detected; others still end in a dead end, never in an invalid output.

`candidates(vocab, tracker)`: the tokens for which a mask evaluates it (whitespace-free
prefixes of an earlier item's rest, and whitespace tokens), so that the mask and the step
agree. Reads unique.py's tracker layout (frames ("a", ctx, unique, seen, item text, written
texts); modes); knows nothing about schemas.
"""

from __future__ import annotations

_WS = b" \t\n\r"
V, K, S, SK, C, A, N = range(7)  # unique.py's tracker modes
_PROBE = [bytes([b]) for b in b',:]}"[{-0123456789.eE+tfn']  # what may follow outside a string


def squeeze(raw: bytes) -> bytes:
    """The text without whitespace bytes (how earlier items' texts are compared)."""
    return raw.translate(None, _WS)


def _open_item(stack) -> int | None:
    """Index of the innermost unique array frame with an item in progress."""
    for i in range(len(stack) - 1, -1, -1):
        f = stack[i]
        if f[0] == "a" and f[2] and f[4] is not None:
            return i if f[5] else None
    return None


def _closers(stack, at: int, mode: int, item: bytes) -> bytes | None:
    """The brackets that close the item (frames above `at`) now, or None where it cannot
    close (after a `,` or `:`, inside a key)."""
    last = squeeze(item)[-1:]
    if mode in (C, SK) or (mode == K and last != b"{") or (mode == V and last != b"["):
        return None
    return b"".join(b"}" if f[0] == "o" else b"]" for f in reversed(stack[at + 1:]))


def dead_item(wrapper, state) -> bool:
    """True when the item in progress can only be completed as an earlier item's value."""
    inner, (stack, mode, _, esc) = state[0], state[1]
    at = _open_item(stack)
    if at is None:
        return False
    item, written = stack[at][4], stack[at][5]
    forced = b""
    if mode == S:
        if esc:
            return False
        forced = wrapper.inner.forced_bytes(inner)
        end = forced.find(b'"')
        if end < 0 or b"\\" in forced[:end]:
            return False
        forced = forced[:end + 1]
    closers = _closers(stack, at, A if mode == S else mode, item + forced)
    if closers is None or squeeze(item + forced) + closers not in written:
        return False
    if forced:
        tracker = wrapper._scan(state[1], forced)
        if tracker is None:
            return True  # the forced closing quote completes the duplicate
        inner = wrapper.inner.advance_bytes(inner, forced)
        if inner is None:
            return False
        state = (inner, tracker)
    return not any(wrapper.inner.advance_bytes(state[0], b) is not None
                   and wrapper._scan(state[1], b) is not None for b in _PROBE)


def candidates(vocab, tracker) -> list[int]:
    """Token ids after which `dead_item` can hold: their whitespace-free bytes extend the
    item's text along an earlier item's written text (or they are whitespace)."""
    stack = tracker[0]
    at = _open_item(stack)
    if at is None:
        return []
    done = squeeze(stack[at][4])
    rests = [w[len(done):] for w in stack[at][5] if w.startswith(done) and len(w) > len(done)]
    if not rests:
        return []
    by_text = _squeezed_ids(vocab)
    out: set[int] = set(by_text.get(b"", ()))
    for rest in rests:
        for k in range(1, len(rest) + 1):
            out.update(by_text.get(rest[:k], ()))
    return sorted(out)


def _squeezed_ids(vocab) -> dict[bytes, list[int]]:
    """Whitespace-free token bytes -> token ids (cached on the vocabulary)."""
    got = vocab.mask_cache.get("unique_squeezed_ids")
    if got is None:
        got = {}
        for i, data in enumerate(vocab.token_bytes):
            if data:
                got.setdefault(squeeze(data), []).append(i)
        vocab.mask_cache["unique_squeezed_ids"] = got
    return got
