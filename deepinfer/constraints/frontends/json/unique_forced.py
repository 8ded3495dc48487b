"""Dead ends of unique arrays: an item whose every completion is an earlier item's value.

Why: unique.py refuses the byte that *completes* a duplicate (a string's closing quote, an
object's `}`, the `,` after a number). When nothing else can come at that point (a `date` or
`uuid` after its last digit, a string at its `maxLength`, `{"id": 1` with no other member
allowed, `10` under `maximum: 10`), refusing only that byte left a dead end: no token at all,
not even EOS. Here the token that leads into such a point is refused instead.

A token is *suspect* when its bytes, whitespace removed, continue the item in progress (or
start one) along the text of an earlier item of the same array as it was written (whitespace
removed): `suspects(tracker)` lists those texts once per tracker position, in two sets. After
a *near* suspect (one ending within DEPTH + 1 bytes of such a text's end), `dead(wrapper,
state)` follows the bytes the inner automaton forces, then tries every byte that may come next
(in the inner automaton and the tracker), DEPTH choices deep: the state is a dead end when none
is left that completes a new value or leaves those texts. After a *far* suspect, `forced_dead`
only follows forced bytes (an enum value, a `false` member) and asks `dead` where they end near
a text's end. The step refuses a suspect token that leads into a dead end, and the mask tests
exactly the suspect tokens it allows, so the two agree. Items written differently from the
earlier one (members in another order, `1.0` for `1`), or dead only after more than DEPTH free
choices, still end in a dead end, never in an invalid output.

Reads unique.py's tracker layout (frames ("a", ctx, unique, seen, item text, written texts);
modes); knows nothing about schemas.
"""

from __future__ import annotations

from deepinfer.constraints import deadline as compile_deadline

_WS = b" \t\n\r"
V, K, S, SK, C, A, N = range(7)  # unique.py's tracker modes
DEPTH = 3  # bytes looked ahead along earlier items' texts
_OUTSIDE = [bytes([b]) for b in b',:]}"[{-0123456789.eE+truefalsn']  # what may follow outside a string
_IN_NUMBER = _OUTSIDE + [b" "]  # whitespace ends a number (elsewhere a token of it is a suspect)
# inside a string: printable ASCII first (usually one of them proves the item can still differ)
_INSIDE = [bytes([b]) for b in list(range(0x20, 0x7F)) + list(range(0x80, 0x100)) + list(range(0x20))]
_MAX_SUSPECT_SETS = 4096
MAX_TOKEN_TEXT = 48  # far suspects: tokens up to this many bytes (longer ones are not checked)
_NONE = (frozenset(), frozenset())


def squeeze(raw: bytes) -> bytes:
    """The text without whitespace bytes (how items' texts are compared)."""
    return raw.translate(None, _WS)


def suspects(cache: dict, tracker) -> tuple[frozenset, frozenset]:
    """(near, far): whitespace-free texts a suspect token may have from this tracker (b"" for
    whitespace). Near ones end within DEPTH + 1 bytes of an earlier item's text (`dead` looks
    there); far ones lead along such a text from further away (`forced_dead` looks there)."""
    stack, mode = tracker[0], tracker[1]
    keys = _suspect_keys(stack, mode)
    if not keys:
        return _NONE
    got = cache.get(keys)
    if got is None:
        near: set[bytes] = set()
        far: set[bytes] = set()
        for done, written, lead in keys:
            for text in written:
                if text.startswith(done) and len(text) > len(done):
                    rest = text[len(done):]
                    edge = len(rest) - DEPTH - 1  # prefixes at least this long end near the text's end
                    if done and edge <= 0:
                        near.add(b"")  # whitespace: a second run inside `[ ]`, the end of a number
                    first = 0 if lead else 1
                    near.update(lead + rest[:k] for k in range(max(edge, first), len(rest) + 1))
                    far.update(lead + rest[:k] for k in range(first, min(edge, first + MAX_TOKEN_TEXT)))
        if len(cache) >= _MAX_SUSPECT_SETS:
            cache.clear()
        got = cache[keys] = (frozenset(near), frozenset(far - near))
    return got


def _suspect_keys(stack, mode) -> tuple:
    """(item text so far, earlier items' texts, separator a new item needs first) for the item
    in progress and for one the next token may start (after `[` or an item of the top array)."""
    keys = []
    top = stack[-1] if stack else None
    if top is not None and top[0] == "a" and top[2] and top[4] is None and top[5] and mode in (V, A):
        keys.append((b"", top[5], b"" if mode == V else b","))
    keys.extend((squeeze(stack[at][4]), stack[at][5], b"") for at in _open_items(stack))
    if top is not None and top[0] == "a" and top[2] and top[4] is not None and mode == N:
        # a number or literal item: a `,` ends it (one more earlier item) and starts the next
        keys.append((b"", top[5] | {squeeze(top[4])}, b","))
    return tuple(keys)


def dead(wrapper, state, depth: int = DEPTH) -> bool:
    """True when no completion of the item in progress, or of one about to start, is a new
    value (see the module docstring)."""
    inner, tracker = state
    stack, mode = tracker[0], tracker[1]
    open_near = any(_along(stack[at]) is not None for at in _open_items(stack))
    starting = mode == V and bool(stack) and stack[-1][0] == "a" and stack[-1][2] and bool(stack[-1][5])
    if not (open_near or starting):
        return False  # the item differs from every earlier one already, or none is in view
    forced = wrapper.inner.forced_bytes(inner)
    if forced:  # no choice to make there: follow it without spending depth
        after_tracker = wrapper._scan(tracker, forced)
        if after_tracker is None:
            return True  # the only way on completes a duplicate
        after = wrapper.inner.advance_bytes(inner, forced)
        return after is not None and dead(wrapper, (after, after_tracker), depth)
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


def forced_dead(wrapper, state) -> bool:
    """`dead` for a far suspect: only where the inner automaton forces the next bytes (an enum
    value or a `false` that only one way goes on) up to near the end of an earlier item's text;
    a free choice that far from the end is taken as a way out (looking costs too much there)."""
    inner, tracker = state
    forced = wrapper.inner.forced_bytes(inner)
    if not forced:
        return False
    after_tracker = wrapper._scan(tracker, forced)
    if after_tracker is None:
        return True
    after = wrapper.inner.advance_bytes(inner, forced)
    if after is None:
        return False
    rests = [_along(after_tracker[0][at]) for at in _open_items(after_tracker[0])]
    near = any(rest is not None and rest <= DEPTH + 1 for rest in rests)
    return near and dead(wrapper, (after, after_tracker))


def _open_items(stack) -> list[int]:
    """Indices of the unique array frames with an item in progress and earlier items, innermost
    first (an inner item does not hide an outer one that repeats an earlier item)."""
    return [i for i in range(len(stack) - 1, -1, -1)
            if stack[i][0] == "a" and stack[i][2] and stack[i][4] is not None and stack[i][5]]


def _along(frame) -> int | None:
    """Bytes left of the shortest earlier item's text that the item in progress is a prefix of
    (whitespace removed), or None when it is a prefix of none."""
    done = squeeze(frame[4])
    rests = [len(t) - len(done) for t in frame[5] if t.startswith(done)]
    return min(rests) if rests else None


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
