"""Dead ends of unique arrays: an item whose every completion is an earlier item's value.

Why: unique.py refuses the byte that *completes* a duplicate (a string's closing quote, an
object's `}`, the `,` after a number). When nothing else can come at that point (a `date` or
`uuid` after its last digit, a string at its `maxLength`, `{"id": 1` with no other member
allowed, `10` under `maximum: 10`), refusing only that byte left a dead end: no token at all,
not even EOS. Here the token that leads into such a point is refused instead.

A token is *suspect* when its bytes, whitespace removed, continue the item in progress (or
start one) along the text of an earlier item of the same array as it was written (whitespace
removed), to within DEPTH + 1 bytes of that text's end: `suspects(tracker)` lists those texts
once per tracker position. After a suspect token,
`dead(wrapper, state)` tries every byte that may come next (in the inner automaton and the
tracker), DEPTH bytes deep along earlier items' texts: the state is a dead end when none is
left that completes a new value or leaves those texts. The step refuses a suspect token
that leads into a dead end, and the mask tests exactly the suspect tokens it allows, so the
two agree. Items written differently from the earlier one (members in another order, `1.0`
for `1`), or dead only deeper than DEPTH bytes, still end in a dead end, never in an invalid
output.

Reads unique.py's tracker layout (frames ("a", ctx, unique, seen, item text, written texts);
modes); knows nothing about schemas.
"""

from __future__ import annotations

_WS = b" \t\n\r"
V, K, S, SK, C, A, N = range(7)  # unique.py's tracker modes
DEPTH = 3  # bytes looked ahead along earlier items' texts
_OUTSIDE = [bytes([b]) for b in b',:]}"[{-0123456789.eE+truefalsn']  # what may follow outside a string
_IN_NUMBER = _OUTSIDE + [b" "]  # whitespace ends a number (elsewhere a token of it is a suspect)
# inside a string: printable ASCII first (usually one of them proves the item can still differ)
_INSIDE = [bytes([b]) for b in list(range(0x20, 0x7F)) + list(range(0x80, 0x100)) + list(range(0x20))]
_MAX_SUSPECT_SETS = 4096


def squeeze(raw: bytes) -> bytes:
    """The text without whitespace bytes (how items' texts are compared)."""
    return raw.translate(None, _WS)


def suspects(cache: dict, tracker) -> frozenset:
    """Whitespace-free texts a suspect token may have from this tracker (b"" for whitespace)."""
    stack, mode = tracker[0], tracker[1]
    keys = _suspect_keys(stack, mode)
    if not keys:
        return frozenset()
    got = cache.get(keys)
    if got is None:
        out: set[bytes] = set()
        for done, written, lead in keys:
            for text in written:
                if text.startswith(done) and len(text) > len(done):
                    rest = text[len(done):]
                    near = len(rest) - DEPTH - 1  # dead() looks DEPTH bytes on: texts near their end
                    if done and near <= 0:
                        out.add(b"")  # whitespace: a second run inside `[ ]`, the end of a number
                    out.update(lead + rest[:k] for k in range(max(near, 0 if lead else 1), len(rest) + 1))
        if len(cache) >= _MAX_SUSPECT_SETS:
            cache.clear()
        got = cache[keys] = frozenset(out)
    return got


def _suspect_keys(stack, mode) -> tuple:
    """(item text so far, earlier items' texts, separator a new item needs first) for the item
    in progress and for one the next token may start (after `[` or an item of the top array)."""
    keys = []
    top = stack[-1] if stack else None
    if top is not None and top[0] == "a" and top[2] and top[4] is None and top[5] and mode in (V, A):
        keys.append((b"", top[5], b"" if mode == V else b","))
    at = _open_item(stack)
    if at is not None:
        keys.append((squeeze(stack[at][4]), stack[at][5], b""))
    return tuple(keys)


def dead(wrapper, state, depth: int = DEPTH) -> bool:
    """True when no completion of the item in progress, or of one about to start, is a new
    value (see the module docstring)."""
    inner, tracker = state
    stack, mode = tracker[0], tracker[1]
    at = _open_item(stack)
    open_near = at is not None and any(text.startswith(squeeze(stack[at][4])) for text in stack[at][5])
    starting = mode == V and bool(stack) and stack[-1][0] == "a" and stack[-1][2] and bool(stack[-1][5])
    if not (open_near or starting):
        return False  # the item differs from every earlier one already, or none is in view
    for b in (_INSIDE if mode in (S, SK) else _IN_NUMBER if mode == N else _OUTSIDE):
        after = wrapper.inner.advance_bytes(inner, b)  # first: the tracker assumes JSON text
        if after is None:
            continue
        after_tracker = wrapper._scan(tracker, b)
        if after_tracker is None:
            continue
        if depth == 0 or not dead(wrapper, (after, after_tracker), depth - 1):
            return False
    return True


def _open_item(stack) -> int | None:
    """Index of the innermost unique array frame with an item in progress (and earlier items)."""
    for i in range(len(stack) - 1, -1, -1):
        f = stack[i]
        if f[0] == "a" and f[2] and f[4] is not None:
            return i if f[5] else None
    return None


def token_texts(vocab) -> dict[bytes, list[int]]:
    """Whitespace-free token bytes -> token ids (cached on the vocabulary)."""
    got = vocab.mask_cache.get("unique_squeezed_ids")
    if got is None:
        got = {}
        for i, data in enumerate(vocab.token_bytes):
            if data:
                got.setdefault(squeeze(data), []).append(i)
        vocab.mask_cache["unique_squeezed_ids"] = got
    return got
