"""Forced duplicates: string items of a unique array whose only completion is an earlier item.

Why: unique.py refuses the byte that *completes* a duplicate (the closing quote). When the
item's language leaves no choice before that quote (a `date` or `uuid` once its last digit
is written, a string at its `maxLength`), refusing only the quote left a dead end: after
`["2024-01-01", "2024-01-01` no token at all is allowed. Here the byte that makes the
completion forced is refused instead: after a token the inner automaton's forced bytes
(`forced_bytes`) are read up to the closing quote, and if that string is an earlier item the
token is refused. Items whose remaining choices are all taken without being forced (two
taken one-letter strings out of a two-letter set) are not detected.

Owns `forced_duplicate(inner, inner_state, tracker)` (the predicate both the mask and
the step use) and `duplicate_candidates(vocab, tracker)` (the few token ids for which the
mask must evaluate it: prefixes of a taken string's rest). Reads unique.py's tracker
layout (stack frames ("a", ctx, unique, seen, raw item)); knows nothing about schemas.
"""

from __future__ import annotations

import json

S_MODE = 2  # unique.py's mode "in a value string"


def _item(tracker):
    """(raw content after the opening quote, taken canonical keys) of the string item in
    progress at the top of a unique array, or None (no such item, or one with an escape:
    the check stays on plain UTF-8 content, where bytes equal the decoded text)."""
    stack, mode, _, esc = tracker
    if mode != S_MODE or esc or not stack:
        return None
    top = stack[-1]
    if top[0] != "a" or not top[2] or not top[3] or top[4] is None or top[4][:1] != b'"':
        return None
    content = top[4][1:]
    if b"\\" in content:
        return None
    return content, top[3]


def forced_duplicate(inner, inner_state, tracker) -> bool:
    """True when the string item in progress can only close as a value an earlier item has."""
    item = _item(tracker)
    if item is None:
        return False
    content, seen = item
    forced = inner.forced_bytes(inner_state)
    end = forced.find(b'"')
    if end < 0 or b"\\" in forced[:end]:
        return False
    try:
        value = (content + forced[:end]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return json.dumps(value, sort_keys=True) in seen  # unique.canonical of a string


def duplicate_candidates(vocab, tracker) -> list[int]:
    """Token ids that extend the item's content along a taken string (its plain UTF-8 rest):
    the only tokens for which `forced_duplicate` can hold after them."""
    item = _item(tracker)
    if item is None:
        return []
    content, seen = item
    ids = _token_ids(vocab)
    out: set[int] = set()
    for key in seen:
        if not key.startswith('"'):
            continue
        raw = json.loads(key).encode("utf-8")
        if not raw.startswith(content) or len(raw) == len(content) or b"\\" in raw or b'"' in raw:
            continue
        rest = raw[len(content):]
        for k in range(1, len(rest) + 1):
            tok = ids.get(rest[:k])
            if tok is not None:
                out.update(tok)
    return sorted(out)


def _token_ids(vocab) -> dict[bytes, list[int]]:
    """bytes -> the token ids with exactly those bytes (cached on the vocabulary)."""
    got = vocab.mask_cache.get("unique_token_ids")
    if got is None:
        got = {}
        for i, data in enumerate(vocab.token_bytes):
            if data:
                got.setdefault(data, []).append(i)
        vocab.mask_cache["unique_token_ids"] = got
    return got
