"""Prompt lookup on characters: continue an output with the prompt text after the same characters.

Extraction outputs copy values from the prompt, but not its tokens: the prompt holds ` Ada` (one
token after a space) while the output writes `"Ad` then `a` inside a JSON string, so token n-grams
of the prompt never match the output. This index matches the last `min_chars`..`max_chars`
characters of the output text anywhere in the prompt text (newest occurrence first; an opening
quote may match a space: `"H` finds ` Hedy`) and proposes the prompt's tokens from there. When
the match ends inside a prompt token, the rest of that token's text is re-encoded (`encode`) and
the prompt's own tokens follow.

Deterministic (a function of the prompt, the output text and `encode`). Knows nothing about
models, masks or sampling; the caller walks the proposal through the constraint.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable


@dataclass
class PromptText:
    tokens: list[int]
    text: str
    ends: list[int]      # ends[i]: character offset where prompt token i's text ends (ascending)

    @classmethod
    def build(cls, tokens: list[int], token_text: Callable[[int], str]) -> "PromptText":
        pieces, ends, end = [], [], 0
        for token in tokens:
            piece = token_text(token)
            pieces.append(piece)
            end += len(piece)
            ends.append(end)
        return cls(list(tokens), "".join(pieces), ends)

    def lookup(self, text: str, limit: int, encode: Callable[[str], list[int]],
               min_chars: int = 2, max_chars: int = 24) -> tuple[list[int], int] | None:
        """(up to `limit` tokens continuing the longest suffix of `text` found in the prompt,
        matched characters), or None."""
        if limit <= 0:
            return None
        for n in range(self._longest_found(text, min_chars, max_chars), min_chars - 1, -1):
            at = self._find(text[-n:])
            if at < 0:
                continue
            tokens = self._tokens_from(at + n, limit, encode)
            if tokens:
                return tokens, n
        return None

    def _find(self, key: str) -> int:
        """Where the newest occurrence of `key` starts in the prompt text (-1: none)."""
        at = self.text.rfind(key)
        if at < 0 and key[0] == '"':  # a JSON string's opening quote stands for a word start
            at = self.text.rfind(" " + key[1:])
        return at

    def _longest_found(self, text: str, min_chars: int, max_chars: int) -> int:
        """The longest suffix length in [min_chars, max_chars] that `_find` finds (min_chars - 1:
        none), by bisection: a suffix found means every shorter suffix is (a suffix of it, or of
        the word-start match), so lookup's loop can skip the longer ones, all unfound."""
        lo, hi = min_chars - 1, min(max_chars, len(text))   # found(lo) is assumed, hi unknown
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._find(text[-mid:]) >= 0:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _tokens_from(self, offset: int, limit: int, encode: Callable[[str], list[int]]) -> list[int]:
        """The prompt's tokens from character `offset` on; a token cut by `offset` re-encoded."""
        i = bisect_right(self.ends, offset)              # first token ending after offset
        if i >= len(self.tokens):
            return []
        start = self.ends[i - 1] if i else 0
        head = encode(self.text[offset:self.ends[i]]) if start < offset else []
        if start < offset:
            i += 1
        return (head + self.tokens[i:i + limit])[:limit]
