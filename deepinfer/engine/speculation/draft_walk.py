"""Walking a draft through its sequence's constraint, one free token at a time, on demand.

A draft is usable up to the first token the constraint refuses, and through an eos/stop id; with
jump-forward on, after each draft token the draft must carry exactly the tokens jump-forward would
append there (`forced_tokens`: confidence 1, not counted against `max_draft`), or it is cut
there, or (with the proposer's sequence key) it goes on past them with what followed the text
drafted so far elsewhere (`Speculator.continuation`). See speculative.py, step 2.

Why lazily: the plan admits draft tokens in descending survival across all sequences and stops at
the first that does not pay (draft_lengths.select_lengths), so most of a long draft is never
verified. A walk advances only when the plan asks for its next survival (`DraftWalk.step`), and
each step costs constraint calls (advancing the matcher, the forced text after the token): on the
extraction benchmark lazy walks accept ~40% fewer draft tokens into matchers than whole ones,
for the same plans. The matcher stays advanced through the walked tokens until `close()`.
Knows nothing about the model, the KV cache or sampling.
"""

from __future__ import annotations

from typing import Protocol

from deepinfer.engine import guided
from deepinfer.engine.sequence import Sequence
from deepinfer.engine.speculation.drafts import Draft
from deepinfer.engine.speculation.jump_forward import ForcedText, can_jump, forced_tokens


class WalkLimits(Protocol):
    max_draft: int


class DraftSource(Protocol):
    """What a walk asks of its speculator (`speculative.Speculator`): limits, end ids, token
    texts, confidence keys, and what follows the text drafted so far."""

    config: WalkLimits
    eos_ids: frozenset[int]

    def token_text(self, token: int) -> str: ...

    def position_key(self, walk: "DraftWalk", draft: Draft, position: int, text: str) -> tuple: ...

    def continuation(self, key: object, drafted_text: str, limit: int) -> Draft | None: ...


class DraftWalk:
    """The usable prefix of one draft (`keep`) and a confidence key per token (`keys`; None:
    forced, c = 1), extended by `step()`, or by `advance()` then `take()` (see `WalkSurvival`)."""

    def __init__(self, spec: DraftSource, seq: Sequence, draft: Draft, forced: ForcedText | None,
                 key: object = None, limit: int = 0) -> None:
        self.spec, self.seq, self.forced, self.key = spec, seq, forced, key
        self.matcher, self.greedy = seq.matcher, seq.params.greedy
        self.after_forced = False  # the last token kept was forced (a confidence feature)
        stop_ids = seq.params.stop_token_ids
        self.stops = spec.eos_ids | set(stop_ids) if stop_ids else spec.eos_ids
        self.keep: list[int] = []
        self.keys: list = []
        self.accepted = 0          # tokens accepted into the matcher (rolled back by close)
        self.free = 0              # draft (not forced) tokens walked
        self.chunk, self.at, self.drafted_text = draft, 0, ""
        self.limit = limit or len(draft.tokens)
        self.done = False
        self.max_draft = spec.config.max_draft
        self.tail_pending = False  # the forced tokens after the last draft token are not looked up yet
        self.pending: int | None = None   # the next draft token, not walked through the constraint yet
        self.pending_key, self.pending_text = None, ""

    def step(self) -> bool:
        """Walk on by one token, or by the forced tokens after the last one; False when the walk
        is over (nothing was added)."""
        if self.pending is None:
            if not self.advance():
                return False
            if self.pending is None:  # forced tokens were carried
                return True
        return self.take()

    def advance(self) -> bool:
        """Make the next token available: carry the forced tokens after the last draft token if
        there are any (they join `keep` at once), else prepare the next draft token (`pending`,
        with its confidence key) without asking the constraint yet: the plan asks (`take`) only if
        it would admit it. False when the walk is over. The forced tokens after a token are
        looked up only when the walk goes on past it, for the same reason."""
        if self.tail_pending:
            self.tail_pending = False
            before = len(self.keep)
            self._carry(forced_tokens(self.seq, self.forced, self.keep))  # what jump-forward appends
            if len(self.keep) > before:
                return True
        if self.done:
            return False
        if len(self.keep) >= self.limit or self.free >= self.max_draft:
            self.done = True
            return False
        if self.at >= len(self.chunk.tokens):
            chunk = self.spec.continuation(self.key, self.drafted_text, self.limit - len(self.keep))
            if chunk is None:
                self.done = True
                return False
            self.chunk, self.at = chunk, 0
        token = self.chunk.tokens[self.at]
        self.pending_text = self.spec.token_text(token)
        self.pending_key = self.spec.position_key(self, self.chunk, self.free + 1, self.pending_text)
        self.pending = token
        return True

    def take(self) -> bool:
        """Walk the prepared draft token through the constraint; False (the walk is over) if it
        refuses it."""
        token, matcher, self.pending = self.pending, self.matcher, None
        if matcher is not None:
            if not guided.advance(matcher, token):
                self.done = True
                return False
            self.accepted += 1
        self.free += 1
        self.at += 1
        self.keys.append(self.pending_key)
        self.drafted_text += self.pending_text
        self.keep.append(token)
        self.after_forced = False
        if token in self.stops or (matcher is not None and guided.is_finished(matcher)):
            self.done = True
        elif self.forced is not None and can_jump(self.seq):
            self.tail_pending = True
        return True

    def _carry(self, ids: list[int]) -> None:
        """Take the forced tokens after the last draft token; cut the walk where it must end."""
        keep, chunk, at = self.keep, self.chunk, self.at
        self.accepted += len(ids)
        rest = chunk.tokens[at:at + len(ids)]
        same = next((i for i, (a, b) in enumerate(zip(ids, rest)) if a != b), min(len(ids), len(rest)))
        if same < len(ids) and self.key is None:
            keep += ids[:same]
            self.keys += [None] * same
            self.done = True
            return
        room = self.limit - len(keep)  # never past max_tokens or the context length
        keep += ids[:room]  # all of them: jump-forward appends them whatever is sampled
        self.keys += [None] * min(len(ids), room)
        if len(ids) > room:
            self.done = True
            return
        if ids:
            self.after_forced = True
            self.drafted_text += "".join(self.spec.token_text(t) for t in ids)
        self.at = at + len(ids) if same == len(ids) else len(chunk.tokens)  # diverged: look again

    def close(self) -> None:
        """Roll the matcher back to the sequence's own tokens."""
        if self.matcher is not None:
            guided.undo(self.matcher, self.accepted)
        self.accepted = 0


class WalkSurvival:
    """One walk as a row of `speculative.select_lengths`: `peek()` is the survival of the next
    token (0.0: none), `take()` admits it. A draft token is walked through the constraint only by
    `take()`, when the plan would admit it: the first token the plan stops at (most rows have
    one) costs no constraint call. a_j is computed as a_{j-1} * c_j, as over a whole walk."""

    def __init__(self, walk: DraftWalk, confidence) -> None:
        self.walk, self.confidence = walk, confidence
        self.a, self.j, self.next = 1.0, 0, 0.0
        self.survival: list[float] = []   # a_j of every token taken
        # what its walk raised (None: nothing): the row then offers no more tokens, so one
        # sequence's broken drafter or constraint walk takes no other row's drafts with it
        self.failed: Exception | None = None

    def peek(self) -> float:
        if self.failed is not None:
            return 0.0
        try:
            walk = self.walk
            if self.j >= len(walk.keys) and walk.pending is None and not walk.advance():
                return 0.0
            key = walk.keys[self.j] if self.j < len(walk.keys) else walk.pending_key
            self.next = self.a * self.confidence(key)
        except Exception as exc:  # noqa: BLE001 - the plan bars this sequence (faults.py)
            self.failed = exc
            return 0.0
        return self.next

    def take(self) -> bool:
        if self.failed is not None:
            return False
        try:
            if self.j >= len(self.walk.keys) and not self.walk.take():
                return False
        except Exception as exc:  # noqa: BLE001 - as in peek
            self.failed = exc
            return False
        self.a, self.j = self.next, self.j + 1
        self.survival.append(self.a)
        return True
