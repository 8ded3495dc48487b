"""N-gram draft proposer for speculative decoding: prompt lookup plus a shared pool of outputs.

A draft for a sequence is the continuation of the most recent earlier occurrence of its longest
matching suffix (n from `max_ngram` down to `min_ngram` tokens):
  1. in its own prompt + output (names and values copied from the prompt, repeated keys), then
  2. in a pool of the outputs of the other sequences, running and recently finished (requests
     that share a schema repeat each other's structure: `",\n  "age": ` and the like);
  3. with a `token_text` function, `after_text` continues tokens the caller knows come next (text a
     constraint forces) with what followed the same text elsewhere, matched on characters
     (text_drafts.py: the text before them often ends inside a token no other output has), and
     `continue_text` continues the output text (plus text the caller has already drafted) from
     the outputs' text, then from its own prompt's text (prompt_drafts.py, with `encode`).
Lookups are dict hits: every token appended registers the n-grams ending just before it, mapped to
where their continuation starts. The pool holds at most `pool_tokens` tokens of finished outputs
(oldest dropped first); its dict is rebuilt when stale entries outnumber live ones.

The caller caps the draft length (`propose(key, limit)`).
Deterministic: the same sequence of appended tokens gives the same drafts. Drafts are only
proposals; whether a token is kept is decided by verification (speculative.py / engine.py).
Knows nothing about models, masks, sampling or the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from deepinfer.engine.output_pool import OutputPool
from deepinfer.engine.speculation.prompt_drafts import PromptText
from deepinfer.engine.speculation.text_drafts import TextPool, TextStream

SOURCE_OWN, SOURCE_POOL, SOURCE_FORCED, SOURCE_TEXT, SOURCE_PROMPT = 0, 1, 2, 3, 4
SOURCE_SUFFIX_OWN, SOURCE_SUFFIX_POOL = 5, 6      # suffix_drafts.py
SOURCE_NAMES = {SOURCE_OWN: "ngram_own", SOURCE_POOL: "ngram_pool", SOURCE_FORCED: "forced_text",
                SOURCE_TEXT: "output_text", SOURCE_PROMPT: "prompt_text", SOURCE_SUFFIX_OWN: "suffix_own",
                SOURCE_SUFFIX_POOL: "suffix_group"}


@dataclass
class Draft:
    tokens: list[int]
    source: int          # SOURCE_*: where the match came from
    ngram: int           # length of the matched suffix (tokens; for text sources a bucket of characters)


@dataclass
class NgramIndex:
    """One token stream and, per n-gram in it, where the continuation of its last occurrence starts."""

    max_ngram: int
    tokens: list[int] = field(default_factory=list)
    last: dict[tuple[int, ...], int] = field(default_factory=dict)
    alive: bool = True

    def extend(self, new: list[int], pool: "DraftPool | None" = None) -> None:
        """Append tokens; the n-grams ending just before each new token are followed by it: each
        maps to that position (the latest occurrence wins), here and in `pool`."""
        if len(new) > 16:  # a prompt: per n, zips over shifted slices (~2.5x faster than per token)
            self._extend_long(new, pool)
            return
        tokens, last = self.tokens, self.last
        for token in new:
            end = len(tokens)  # the n-grams ending here are followed by `token`: register them now
            for n in range(1, min(self.max_ngram, end) + 1):
                key = tuple(tokens[end - n:end])
                last[key] = end
                if pool is not None:
                    pool.entries[key] = (self, end)
            tokens.append(token)

    def extend_output(self, new: list[int], output: "NgramIndex", pool: "DraftPool") -> None:
        """`self.extend(new)` and `output.extend(new, pool)` at once, for a prompt + output index
        and its output-only index: an n-gram of the last n <= len(output) tokens is the same
        tuple in both, so each is built once (observe's hot path: a few tokens per step)."""
        tokens, last, max_ngram = self.tokens, self.last, self.max_ngram
        out_tokens, out_last, entries = output.tokens, output.last, pool.entries
        for token in new:
            end, out_end = len(tokens), len(out_tokens)
            value = (output, out_end)
            for n in range(1, min(max_ngram, end) + 1):
                key = tuple(tokens[end - n:end])
                last[key] = end
                if n <= out_end:
                    out_last[key] = out_end
                    entries[key] = value
            tokens.append(token)
            out_tokens.append(token)

    def _extend_long(self, new: list[int], pool: "DraftPool | None") -> None:
        """`extend`, per n instead of per token; in ascending positions per key, as the loop."""
        tokens = self.tokens
        start = len(tokens)
        tokens.extend(new)
        stop = len(tokens)  # n-grams end at start .. stop - 1 (the last token is followed by nothing yet)
        for n in range(1, self.max_ngram + 1):
            lo = max(start, n)
            if lo >= stop:
                continue
            ends = range(lo, stop)
            keys = list(zip(*[tokens[lo - n + i:stop - n + i] for i in range(n)]))  # tokens[end - n:end]
            self.last.update(zip(keys, ends))
            if pool is not None:
                pool.entries.update(zip(keys, [(self, end) for end in ends]))


class DraftPool(OutputPool):
    """N-grams of many sequences' outputs -> (source index, continuation start). Bounded."""

    def __init__(self, pool_tokens: int = 16384) -> None:
        super().__init__(pool_tokens, entries_per_token=8, entries_slack=1024)

    def lookup(self, key: tuple[int, ...]) -> tuple[NgramIndex, int] | None:
        hit = self.entries.get(key)
        return hit if hit is not None and hit[0].alive else None

    def clear(self) -> None:
        """Forget finished outputs (benchmarks: every timed run starts from the same state)."""
        for index in self.finished.values():
            index.alive = False
        self.finished.clear()
        self.finished_tokens = 0
        self._prune()


class NgramProposer:
    """Drafts for sequences identified by a key; call `observe` as tokens are appended."""

    def __init__(self, max_ngram: int = 4, min_ngram: int = 1, pool_tokens: int = 16384,
                 token_text: Callable[[int], str] | None = None,
                 encode: Callable[[str], list[int]] | None = None, text_min_chars: int = 2) -> None:
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.token_text, self.encode = token_text, encode
        self._prompts: dict[object, PromptText] = {}  # key -> prompt text (prompt lookup on characters)
        self.pool = DraftPool(pool_tokens)
        self.text_pool = (TextPool(token_text, min_chars=text_min_chars, pool_tokens=pool_tokens)
                          if token_text is not None else None)
        self._texts: dict[object, TextStream] = {}    # key -> output text (in text_pool)
        self._own: dict[object, NgramIndex] = {}      # key -> prompt + output
        self._outputs: dict[object, NgramIndex] = {}  # key -> output only (what the pool shares)
        self._prompt_len: dict[object, int] = {}

    def observe(self, key: object, prompt: list[int], output: list[int]) -> None:
        """Bring the sequence's indexes up to date with its tokens (appends only)."""
        own = self._own.get(key)
        if own is None:
            own = self._own[key] = NgramIndex(self.max_ngram)
            own.extend(prompt)
            self._outputs[key] = NgramIndex(self.max_ngram)
            self._prompt_len[key] = len(prompt)
            if self.token_text is not None and self.encode is not None:
                self._prompts[key] = PromptText.build(prompt, self.token_text)
        done = len(own.tokens) - self._prompt_len[key]
        if done < len(output):
            new = output[done:]
            if len(new) > 16:
                own.extend(new)
                self._outputs[key].extend(new, self.pool)
            else:
                own.extend_output(new, self._outputs[key], self.pool)
            self.pool.live_tokens += len(new)
        if self.text_pool is not None:
            stream = self._texts.setdefault(key, TextStream())
            if len(stream.tokens) < len(output):
                self.text_pool.extend(stream, output[len(stream.tokens):])

    def knows(self, key: object) -> bool:
        return key in self._own

    def propose(self, key: object, limit: int, min_ngram: int | None = None) -> Draft | None:
        """The draft after the longest matching suffix of at least `min_ngram` tokens (own
        context first at each n), or None."""
        own = self._own.get(key)
        if own is None or limit <= 0:
            return None
        tokens = own.tokens
        for n in range(min(self.max_ngram, len(tokens)), (min_ngram or self.min_ngram) - 1, -1):
            suffix = tuple(tokens[-n:])
            start = own.last.get(suffix)
            if start is not None:
                return Draft(tokens[start:start + limit], SOURCE_OWN, n)
            hit = self.pool.lookup(suffix)
            if hit is not None:
                source, start = hit
                draft = source.tokens[start:start + limit]
                if draft:
                    return Draft(draft, SOURCE_POOL, n)
        return None

    def after_text(self, key: object, lead: list[int], lead_text: str, limit: int) -> Draft:
        """`lead` (tokens the caller knows come next, whose text is `lead_text`), continued by the
        newest text-suffix continuation of the output text followed by `lead_text`."""
        stream = self._texts.get(key)
        if self.text_pool is None or stream is None or limit <= len(lead):
            return Draft(lead[:limit], SOURCE_FORCED, 0)
        found = self.text_pool.lookup(stream.text + lead_text, limit - len(lead))
        if found is None:
            return Draft(lead, SOURCE_FORCED, 0)
        tokens, chars = found
        return Draft(lead + tokens, SOURCE_FORCED, _bucket(chars))

    def continue_text(self, key: object, drafted_text: str, limit: int) -> Draft | None:
        """What followed the output text (then `drafted_text`, tokens the caller already drafted)
        elsewhere: in the outputs' text first, else in the sequence's own prompt text."""
        stream = self._texts.get(key)
        if self.text_pool is None or stream is None or limit <= 0:
            return None
        text = stream.text + drafted_text
        found = self.text_pool.lookup(text, limit)
        if found is not None:
            return Draft(found[0], SOURCE_TEXT, _bucket(found[1]))
        prompt = self._prompts.get(key)
        found = prompt.lookup(text, limit, self.encode) if prompt is not None else None
        if found is not None:
            return Draft(found[0], SOURCE_PROMPT, _bucket(found[1]))
        return None

    def add_text(self, tokens: list[int]) -> None:
        """Tokens no sequence wrote (a schema's skeleton) join the text pool as a finished output."""
        if self.text_pool is not None and tokens:
            stream = TextStream()
            self.text_pool.extend(stream, tokens)
            self.text_pool.retire(stream)

    def release(self, key: object) -> None:
        """The sequence finished: drop its own index, keep its output in the pool."""
        self._own.pop(key, None)
        self._prompts.pop(key, None)
        self._prompt_len.pop(key, None)
        output = self._outputs.pop(key, None)
        if output is not None:
            self.pool.retire(output)
        stream = self._texts.pop(key, None)
        if stream is not None:
            self.text_pool.retire(stream)


def _bucket(chars: int) -> int:
    """Matched characters -> a coarse bucket for acceptance statistics (2, 4, 8, 12, 16)."""
    return 2 if chars <= 2 else 4 if chars <= 4 else 8 if chars <= 8 else 12 if chars <= 12 else 16
