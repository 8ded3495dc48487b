"""Incremental detokenization for streaming: text out as tokens come in.

A character can span several tokens (byte-level BPE pieces of an emoji, or
byte-fallback `<0xNN>` tokens), and some decoders change a token's text
depending on what precedes it (SentencePiece's leading-space strip). So text
is never produced per token: each push decodes a short window that starts at
the previous emission point (already-emitted context plus the new tokens),
and emits only what the window adds beyond its context. While the window's
text ends in U+FFFD the character is still incomplete and nothing is
emitted; `flush` releases whatever remains, so the concatenation of all
pushes and the flush equals `decode(all ids)`.

Knows nothing about models, sampling or requests.
"""

from __future__ import annotations

from typing import Callable

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Streaming decode of one sequence.

    decode: ids -> text, the tokenizer's full decode (skip_special_tokens bound in).
    """

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self.ids: list[int] = []
        self._prefix = 0  # window start: first token of the context already emitted
        self._read = 0  # tokens before this index have been emitted as text
        self._emitted = 0  # characters returned so far
        self._context = ""  # decode(ids[prefix:read]), cached: it changes only on emission

    def push(self, token_id: int) -> str:
        """Add one token; return the newly completed text (possibly "")."""
        self.ids.append(int(token_id))
        context = self._context
        text = self._decode(self.ids[self._prefix:])
        if text.endswith(REPLACEMENT) or len(text) <= len(context) or not text.startswith(context):
            # Incomplete character (or nothing new yet): wait for more tokens.
            return ""
        self._advance()
        self._emitted += len(text) - len(context)
        return text[len(context):]

    def _advance(self) -> None:
        """Everything up to the last token is emitted: it becomes the next window's context."""
        self._prefix, self._read = self._read, len(self.ids)
        self._context = self._decode(self.ids[self._prefix:self._read])

    def flush(self) -> str:
        """Return the text still held back (a trailing incomplete character decodes as U+FFFD)."""
        if self._read == len(self.ids):
            return ""
        text = self._decode(self.ids[self._prefix:])
        if text.startswith(self._context):
            rest = text[len(self._context):]
        else:  # a decoder whose output is not prefix-stable: fall back to one full decode
            rest = self._decode(self.ids)[self._emitted:]
        self._advance()
        self._emitted += len(rest)
        return rest
