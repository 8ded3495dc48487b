"""Text-suffix continuations: what followed the same text elsewhere, matched on characters.

When the constraint forces text that jump-forward leaves to the sampler (speculative.py),
a draft opens with those tokens; what comes after them is best predicted by what followed the
same text in other outputs: after `":` the outputs go on with ` "` (a string value). Token
n-grams cannot see that match when the tokens before differ (`"name` vs `"city`), so this index
matches the last `min_chars`..`max_chars` characters of a text against text that ends at a
token boundary, on a line with the same indentation, in the outputs of all sequences (running
and recently finished, its own included), newest occurrence first, and proposes the tokens that
followed there.

Token texts come from a `token_text(id) -> str` function (the tokenizer's decode of one token,
cached by the engine); any fixed function works, matches only need to be consistent.
Deterministic: the same appended tokens give the same continuations. Knows nothing about
models, masks or sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from deepinfer.engine.output_pool import OutputPool


@dataclass(eq=False)
class TextStream:
    """One output: its tokens and their concatenated text."""

    tokens: list[int] = field(default_factory=list)
    text: str = ""
    alive: bool = True
    indent: int = 0        # line_indent(text), kept up to date token by token (not rescanned)
    blank: bool = True     # the last line of text holds only blanks so far

    def append(self, token: int, piece: str) -> None:
        self.tokens.append(token)
        self.text += piece
        if "\n" in piece:
            piece = piece[piece.rfind("\n") + 1:]
            self.indent, self.blank = 0, True
        if self.blank:
            rest = piece.lstrip(" \t")
            self.indent += len(piece) - len(rest)
            self.blank = not rest


class TextPool(OutputPool):
    """Text suffixes ending at token boundaries -> (stream, token position) of the newest one."""

    def __init__(self, token_text: Callable[[int], str], min_chars: int = 2, max_chars: int = 12,
                 pool_tokens: int = 16384) -> None:
        super().__init__(pool_tokens, entries_per_token=2 * max_chars, entries_slack=4096)
        self.token_text, self.min_chars, self.max_chars = token_text, min_chars, max_chars

    def extend(self, stream: TextStream, new: list[int]) -> None:
        """Append tokens to a stream, registering the text before each as a matchable suffix."""
        entries, lo, hi, token_text = self.entries, self.min_chars, self.max_chars, self.token_text
        for token in new:
            text, indent = stream.text, stream.indent
            value = (stream, len(stream.tokens))
            for n in range(lo, min(hi, len(text)) + 1):
                entries[indent, text[-n:]] = value
            stream.append(token, token_text(token))
        self.live_tokens += len(new)

    def lookup(self, text: str, limit: int) -> tuple[list[int], int] | None:
        """(tokens[:limit] after the longest matching suffix of `text` on a line indented alike,
        matched characters)."""
        indent = line_indent(text)
        for n in range(min(self.max_chars, len(text)), self.min_chars - 1, -1):
            hit = self.entries.get((indent, text[-n:]))
            if hit is not None and hit[0].alive:
                tokens = hit[0].tokens[hit[1]:hit[1] + limit]
                if tokens:
                    return tokens, n
        return None


def line_indent(text: str) -> int:
    """Leading blanks of the last line of `text`. Suffixes match only on lines indented alike: after
    `",` an array item at depth 2 goes on with `\n    "`, a member at depth 1 with `\n  "`, and
    the characters just before cannot tell them apart."""
    line = text[text.rfind("\n") + 1:]
    return len(line) - len(line.lstrip(" \t"))
