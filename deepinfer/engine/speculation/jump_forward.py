"""Jump-forward decoding: text that the constraint forces is appended without sampling it.

After each sampled token (and once before the first), `guided.forced_text` says
which text every valid continuation starts with: in a JSON Schema object with fixed properties,
the next key and its `":` for instance. That text is tokenized and its tokens appended at once;
the next step feeds them to the model as one multi-token chunk, with logits for its last row
only. Forced tokens thus cost neither a sampling step of their own nor a vocabulary projection,
and the sequence needs fewer forward passes (each of which streams all weights and its KV).

What it keeps and what it changes:
- outputs stay exactly what the constraint allows: every token advances the matcher first
  (`guided.advance`), and jumping stops at the first one it refuses;
- stop strings, stop ids, max_tokens and the model's length apply per appended token, as for
  sampled ones (`output.append_token`); TTFT still measures the model's first sampled token;
- seeded sampling stays a function of (seed, position): forced tokens take the positions sampled
  ones would. Outputs equal those of a run without jump-forward whenever the model would have
  written the forced text with the tokenizer's own encoding of it. The last forced token is left to
  the sampler when a longer allowed token starts with it (the model may write `",` where `"` is
  forced); without that rule 2 of the 32 SmolLM2 benchmark outputs changed, with it none did in
  float32 (the forced keys, e.g. `name` in `"name":`, are appended; 7 tokens per output there).
  Outside batch-invariant mode a step's composition affects numerics, and jump-forward changes it;
- a constraint that is complete and allows nothing but end-of-sequence ends the output at once
  (after a JSON object's closing `}`): the end token is appended as forced text, the tokenizer's
  primary one when several are allowed (the text is the same; only that special token's id may
  differ from a sampled end), saving a step per output (`forced_end`);
- requests that ask for logprobs never jump (forced tokens would have none);
- `EngineConfig(jump_forward=False)` turns it off.
Knows nothing about the model or the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deepinfer.engine import guided
from deepinfer.engine.output import append_token
from deepinfer.engine.sequence import Sequence


class ForcedText:
    """Turns the text a constraint forces into tokens to append, for one engine's tokenizer.

    What is forced depends only on the matcher's state, which is a function of the tokens it
    accepted: the output so far, plus draft tokens while a draft is walked (speculative.py). So
    the results are remembered per (matcher, accepted tokens): the plan's walk computes them for
    the draft, and `jump_forward` after the verified tokens (the same tokens) finds them there
    instead of asking the constraint again (find_jump_forward_string, encode, a mask for
    `extendable`). Entries live two steps (`new_step`), or up to `MEMO_SIZE` without steps."""

    MEMO_SIZE = 4096
    # `extendable` asks the matcher about up to this many longer tokens (~8 us each) instead of
    # filling a whole mask (~40 us): on the extraction benchmark 164 of 240 checks have one.
    ACCEPT_TESTS = 4

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self._extensions: dict[tuple[int, int], np.ndarray] = {}   # (id(vocab), token) -> ids
        self._vocabs: dict[int, object] = {}                        # keeps those ids valid
        self._encoded: dict[str, list[int]] = {}                    # forced text -> its tokens ([] if unusable)
        self._memo: dict[tuple, Forced] = {}                        # state key -> what it forces
        self._previous: dict[tuple, Forced] = {}                    # the step before's entries

    def new_step(self) -> None:
        """Forget entries older than the previous step (they hold finished matchers alive)."""
        self._previous, self._memo = self._memo, {}

    # A key spells out the last KEY_TOKENS accepted tokens and counts the rest: more than a draft
    # walks, so the rest is output, which only grows (the same for every key of one matcher), and a
    # key costs O(KEY_TOKENS), not O(output) (a 4K-token output made every lookup copy 4K tokens).
    KEY_TOKENS = 64

    @staticmethod
    def state_key(seq: Sequence, drafted: list[int] | tuple = ()) -> tuple | None:
        """(matcher, how many tokens it accepted, the last of them): a key for its state while the
        matcher has accepted exactly the output and then `drafted`; None when that cannot be
        checked (or the draft is longer than a key spells out)."""
        output = getattr(seq, "output_token_ids", None)
        if (output is None or guided.depth(seq.matcher) != len(output) + len(drafted)
                or len(drafted) >= ForcedText.KEY_TOKENS):
            return None
        tail = output[-(ForcedText.KEY_TOKENS - len(drafted)):]
        return seq.matcher, len(output) + len(drafted), (*tail, *drafted)

    def lookup(self, seq: Sequence, drafted: list[int] | tuple = ()) -> "Forced":
        """The forced text and its tokens at the matcher's state (remembered per state)."""
        key = self.state_key(seq, drafted)
        found = self._find(key)
        if found is None:
            text = guided.forced_text(seq.matcher)
            found = Forced(text, self._encode(text) if text else [])
            if key is not None:
                if len(self._memo) >= self.MEMO_SIZE:
                    self._memo.clear()
                self._memo[key] = found
        return found

    def _find(self, key: tuple | None) -> "Forced | None":
        if key is None:
            return None
        found = self._memo.get(key)
        if found is None:
            found = self._previous.get(key)
            if found is not None:
                self._memo[key] = found
        return found

    def token_ids(self, seq: Sequence) -> list[int]:
        """The tokenizer's encoding of the text the constraint forces now ([] when none)."""
        return list(self.lookup(seq).ids)

    def _encode(self, text: str) -> list[int]:
        ids = self._encoded.get(text)
        if ids is None:
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            # A tokenizer that normalizes (adds a prefix space, ...) would not reproduce the forced text.
            if self.tokenizer.decode(ids, skip_special_tokens=False) != text:
                ids = []
            if len(self._encoded) >= self.MEMO_SIZE:
                self._encoded.clear()
            self._encoded[text] = ids
        return ids

    def extendable(self, seq: Sequence, token: int) -> bool:
        """Could the model write `token`'s text as the start of a longer token allowed here?

        Forced text ends where free text begins, and the model may prefer a token that spans the
        boundary (a forced `"` then `,`: the model writes `",`). Forcing the short token would
        change the tokenization it sees, so such a last token is left to the sampler.
        """
        longer = self._longer_tokens(guided.vocabulary(seq.matcher), token)
        if longer.size == 0:
            return False
        if longer.size <= self.ACCEPT_TESTS:  # a few: ask the matcher for each (what the mask says)
            return guided.allows_any(seq.matcher, longer.tolist())
        row = guided.mask_row(seq.matcher)
        return bool(((row[longer // 32] >> (longer % 32)) & 1).any())

    def _longer_tokens(self, vocab, token: int) -> np.ndarray:
        key = (id(vocab), token)
        if key not in self._extensions:
            self._vocabs[id(vocab)] = vocab
            prefix = vocab.token_bytes[token] or b""
            self._extensions[key] = np.array(
                [t for t, b in enumerate(vocab.token_bytes)
                 if b is not None and len(b) > len(prefix) and b.startswith(prefix)], dtype=np.int64)
        return self._extensions[key]


def can_jump(seq: Sequence) -> bool:
    return seq.matcher is not None and not seq.finished and seq.params.logprobs is None


@dataclass(eq=False)
class Forced:
    """What one matcher state forces: the text, its tokens, and (once `forced_tokens` computed
    them there) those of them that jump-forward appends."""

    text: str
    ids: list[int]
    accepted: list[int] | None = None


def forced_tokens(seq: Sequence, forced: ForcedText, drafted: list[int] | tuple = ()) -> list[int]:
    """The tokens `jump_forward` would append now (before any stop or length check), accepted into
    the matcher, which the caller rolls back: speculative drafts pass through forced text this way.
    `drafted`: the tokens the matcher accepted after the output (a draft being walked)."""
    if not can_jump(seq):
        return []
    found = forced.lookup(seq, drafted)
    if found.accepted is not None:
        guided.advance_known(seq.matcher, found.accepted, "remembered forced tokens")
        return list(found.accepted)
    ids, accepted = found.ids, []
    for i, token in enumerate(ids):
        if (i == len(ids) - 1 and forced.extendable(seq, token)) or not guided.advance(seq.matcher, token):
            break
        accepted.append(token)
    found.accepted = list(accepted)
    return accepted


def jump_forward(seq: Sequence, forced: ForcedText, eos_ids: frozenset[int], max_model_len: int) -> int:
    """Append the tokens the constraint forces now; returns how many were appended."""
    if not can_jump(seq):
        return 0
    found = forced.lookup(seq)
    known = found.accepted is not None  # computed at this very state by a draft's walk
    ids = found.accepted if known else found.ids
    appended = 0
    for i, token in enumerate(ids):
        if seq.finished or (not known and i == len(ids) - 1 and forced.extendable(seq, token)):
            break
        if known:
            guided.advance_known(seq.matcher, [token], "remembered forced tokens")
        elif not guided.advance(seq.matcher, token):
            break
        append_token(seq, token, None, eos_ids, max_model_len, accepted=True)
        appended += 1
    end = None if seq.finished else forced_end(seq, forced, eos_ids)
    if end is not None and guided.advance(seq.matcher, end):
        append_token(seq, end, None, eos_ids, max_model_len, accepted=True)
        appended += 1
    return appended


def forced_end(seq: Sequence, forced: ForcedText, eos_ids: frozenset[int]) -> int | None:
    """The end token to append when the constraint is complete and allows only end tokens.
    Only complete constraints pay for the mask (one bitmask row, no unpacking)."""
    if not guided.is_complete(seq.matcher):
        return None
    words = guided.mask_row(seq.matcher).view(np.uint32)
    allowed = [t for t in sorted(eos_ids) if t < words.size * 32 and (int(words[t // 32]) >> (t % 32)) & 1]
    for t in allowed:  # clear the end tokens: anything left is a way to continue
        words[t // 32] &= np.uint32(~(1 << (t % 32)) & 0xFFFFFFFF)
    if not allowed or words.any():
        return None
    primary = forced.tokenizer.eos_token_id
    return primary if primary in allowed else allowed[0]
