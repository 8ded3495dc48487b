"""Confidence-scheduled speculative decoding: how many draft tokens each sequence verifies.

Drafts are proposals without a second model (candidates.py: suffix automata, token n-grams, text
continuations). The engine verifies them with "sampled-verify": every verified row is sampled
exactly as the non-speculative path would sample that position (same mask, penalties, seed and
position), and a draft token is kept iff it equals that sample. Outputs are therefore the
non-speculative outputs whatever is drafted or verified; only the speed depends on this module.

Per step (`Speculator.plan`), for each decoding sequence:
1. propose a draft (at most `max_draft` free tokens, capped by max_tokens and the context length):
   where the constraint forces text that jump-forward left to the sampler (its last token could
   be extended: `":` before ` "`), the draft opens with those tokens, continued by what followed
   the same text in outputs so far (`NgramProposer.after_text`); otherwise the drafter whose
   proposal has the most expected accepted tokens (candidates.py);
2. walk the constraint's matcher through it, lazily (draft_walk.py): cut it at the first token the
   constraint refuses and after an eos/stop id; where the constraint forces text after a draft
   token, the draft carries exactly the tokens jump-forward would append (in full, confidence 1,
   not counted against `max_draft`);
3. confidence of each free draft token from the survival model fitted online on this engine's
   outcomes (confidence.py: drafter, match length, position, the constraint's branching, the
   request's recent acceptance); survival a_j = prod c up to j;
4. verification lengths maximize expected accepted tokens per second of step time
   tau / T(B) (draft_lengths.py), T measured on this machine and model (step_cost.py): a draft
   token is verified only when its expected gain pays for its row, so a step whose drafts do not
   pay verifies nothing and costs what a plain step costs.
Knows nothing about the model, the KV cache or sampling arithmetic.
"""

from __future__ import annotations

import json
from typing import Callable

from deepinfer.engine.sequence import Sequence
from deepinfer.engine.speculation.candidates import DraftCandidates
from deepinfer.engine.speculation.confidence import (AFTER_FORCED, CONSTRAINED, FREE, RecentAcceptance,
                                                     SurvivalModel, match_bucket)
from deepinfer.engine.speculation.draft_lengths import select_lengths
from deepinfer.engine.speculation.draft_walk import DraftWalk, WalkSurvival
from deepinfer.engine.speculation.drafts import Draft, NgramProposer
from deepinfer.engine.speculation.faults import SpeculationFaults, contained
from deepinfer.engine.speculation.jump_forward import ForcedText, can_jump
from deepinfer.engine.speculation.outcomes import DraftInfo, DrafterStats
from deepinfer.engine.speculation.resting import Resting
from deepinfer.engine.speculation.schema_drafts import skeleton_text
from deepinfer.engine.speculation.settings import SpeculativeConfig
from deepinfer.engine.speculation.step_cost import ForwardCurve, MeasuredCost, PriorCost

__all__ = ["SpeculativeConfig", "Speculator"]


class Speculator:
    """Proposes, truncates and schedules drafts; learns acceptance and step cost."""

    def __init__(self, config: SpeculativeConfig, eos_ids: frozenset[int],
                 token_text: Callable[[int], str] | None = None,
                 encode: Callable[[str], list[int]] | None = None,
                 forward: ForwardCurve | None = None) -> None:
        """forward: the engine's probed forward-pass times (None, or `measured_cost` off: the prior)."""
        self.config = config
        self.eos_ids = eos_ids
        self.proposer = NgramProposer(config.max_ngram, config.min_ngram, config.pool_tokens, token_text, encode,
                                      config.text_min_chars)
        self.candidates = DraftCandidates(self.proposer, config.pool_tokens, config.min_suffix_match,
                                          config.continue_drafts)
        self.survival = SurvivalModel()
        self.recent = RecentAcceptance()
        self.drafters = DrafterStats()
        self.cost = (MeasuredCost(forward) if forward is not None and config.measured_cost
                     else PriorCost(config.prior_overhead_rows))
        self._counts = {"draft_tokens": 0, "verified_tokens": 0, "accepted_tokens": 0}
        self._schemas: set[str] = set()   # JSON schemas whose skeleton is in the text pool
        self._unverified: dict[object, int] = {}   # sequence -> plans since one verified its draft
        self.resting = Resting(config.max_rest)
        self._step_outcome = (0, 0)   # (verified, accepted) draft tokens of the step under way
        self.faults = SpeculationFaults()

    def keep_learning_of(self, other: "Speculator") -> None:
        """Take over what `other` learned about this engine (the survival model, overall
        acceptance, the step-cost fit) but none of its outputs: a warm engine meeting new requests
        (benchmarks time runs this way, so that no run drafts from an identical earlier one)."""
        self.survival = other.survival
        self.recent.overall = {kind: list(rate) for kind, rate in other.recent.overall.items()}
        if type(self.cost) is type(other.cost) and isinstance(self.cost, MeasuredCost):
            self.cost = other.cost

    @property
    def counters(self) -> dict:
        """Token counts, per-drafter outcomes and the survival model's calibration (engine stats)."""
        calibration = self.survival.calibration
        return {**self._counts, "resting_skips": self.resting.skipped, "speculation_faults": self.faults.count,
                "drafters": self.drafters.summary(),
                "survival_calibration_error": calibration.expected_error(),
                "survival_calibration": calibration.table()}

    def plan(self, running: list[Sequence], budget: int, forced: ForcedText | None, max_model_len: int,
             waiting: int = 0) -> None:
        """Set `seq.draft` (the tokens to verify this step) for every running sequence. (`waiting`:
        requests not admitted yet; the measured cost needs no guess of the batch to come.) A fault
        drops drafts, never a request (faults.py)."""
        try:
            self._plan(running, budget, forced, max_model_len)
        except Exception as exc:  # noqa: BLE001 - see faults.py
            for seq in running:
                seq.draft, seq.draft_info = [], None
            self.faults.unattributed(exc, "planning drafts")

    def _plan(self, running: list[Sequence], budget: int, forced: ForcedText | None, max_model_len: int) -> None:
        self.survival.refit()
        self.resting.tick()
        self._step_outcome = (0, 0)
        walks: list[DraftWalk] = []
        base_tokens, sampling = 0, 0
        if forced is not None:
            forced.new_step()
        for seq in running:
            seq.draft, seq.draft_info = [], None
            pending = seq.num_tokens - seq.num_computed
            base_tokens += min(pending, budget)
            if seq.finished or not 1 <= pending <= self.config.max_pending:
                continue
            sampling += 1
            key = (seq.request.request_id, seq.index)
            if key in self.faults.barred or (seq.matcher is None and self.resting.resting(key)):
                continue
            try:
                walk = self._walk(seq, forced, max_model_len)
            except Exception as exc:  # noqa: BLE001 - its drafter state: it drafts no more
                self.faults.bar(key, exc, "proposing a draft")
                continue
            if walk is not None:
                walks.append(walk)
            else:
                self.resting.fruitless(key)
        if not walks:
            return
        room = budget - base_tokens
        self.cost.prepare(base_tokens, base_tokens + min(room, len(walks) * (self.config.max_draft + 1)))
        rows = [WalkSurvival(walk, self.survival.confidence) for walk in walks]
        try:
            lengths = select_lengths(rows, base_tokens, float(sampling), self.cost, room)
            self._explore(walks, rows, lengths, room - sum(lengths))
        finally:
            self._close(walks)
        for walk, row, length in zip(walks, rows, lengths):
            if row.failed is not None:  # its walk raised (draft_walk.py): it drafts no more
                self.faults.bar(walk.key, row.failed, "walking a draft through its constraint")
            elif not length:
                self.resting.fruitless(walk.key)
            else:
                walk.seq.draft = walk.keep[:length]
                walk.seq.draft_info = DraftInfo(walk.keys[:length], row.survival[:length])
                self._counts["draft_tokens"] += length

    def _close(self, walks: list[DraftWalk]) -> None:
        """Roll every walk's matcher back, each on its own: a matcher left advanced would mask
        the plain step wrongly, so one that cannot be rolled back is reported (`faults.broken`)
        and the engine fails its request."""
        for walk in walks:
            try:
                walk.close()
            except Exception as exc:  # noqa: BLE001
                self.faults.bar(walk.key, exc, "rolling a draft walk back")
                self.faults.broken.append((walk.seq, exc))

    def _explore(self, walks: list[DraftWalk], rows: list[WalkSurvival], lengths: list[int], room: int) -> None:
        """Verify the first token of drafts of sequences the plans left unverified for
        `explore_every` steps (see settings.py)."""
        for i, (walk, row) in enumerate(zip(walks, rows)):
            if lengths[i]:
                self._unverified[walk.key] = 0
                continue
            waited = self._unverified.get(walk.key, 0) + 1
            if waited >= self.config.explore_every and room > 0 and row.peek() > 0 and row.take():
                lengths[i], room, waited = 1, room - 1, 0
            self._unverified[walk.key] = waited

    def _walk(self, seq: Sequence, forced: ForcedText | None, max_model_len: int) -> DraftWalk | None:
        key = (seq.request.request_id, seq.index)
        if not self.proposer.knows(key):
            self._seed_schema(seq.params.json_schema)
        self.proposer.observe(key, seq.request.prompt_token_ids, seq.output_token_ids)
        self.candidates.observe(key, seq)
        limit = min(seq.params.max_tokens - len(seq.output_token_ids) - 1, max_model_len - seq.num_tokens - 1)
        limit = min(limit, self.config.max_draft + self.config.max_forced)
        if limit <= 0:
            return None
        lead = self._forced_lead(seq, forced)
        if lead:
            draft = self.proposer.after_text(key, *lead, limit)
        else:
            constrained = seq.matcher is not None
            draft = self.candidates.best(key, seq, limit, lambda d: self._expected(d, seq, constrained))
        return DraftWalk(self, seq, draft, forced, key, limit) if draft is not None else None

    def _expected(self, draft: Draft, seq: Sequence, constrained: bool) -> float:
        """sum_j a_j over the draft's first max_draft tokens, the constraint not walked."""
        total, a = 0.0, 1.0
        greedy, recent = seq.params.greedy, self.recent.decile((seq.request.request_id, seq.index), constrained)
        context = CONSTRAINED if constrained else FREE
        for position, token in enumerate(draft.tokens[:self.config.max_draft], 1):
            a *= self.survival.confidence(self._key(draft, position, greedy, self.token_text(token), context, recent))
            total += a
        return total

    def position_key(self, walk: DraftWalk, draft: Draft, position: int, text: str) -> tuple:
        """The confidence key of a walk's next free token (confidence.py says what each field is)."""
        context = FREE if walk.matcher is None else AFTER_FORCED if walk.after_forced else CONSTRAINED
        return self._key(draft, position, walk.greedy, text, context,
                         self.recent.decile(walk.key, walk.matcher is not None))

    @staticmethod
    def _key(draft: Draft, position: int, greedy: bool, text: str, context: int, recent: int) -> tuple:
        structural = not any(c.isalnum() for c in text)
        return draft.source, match_bucket(draft.ngram), position, greedy, structural, context, recent

    def _forced_lead(self, seq: Sequence, forced: ForcedText | None) -> tuple[list[int], str] | None:
        """The tokens of the text the constraint forces now, when jump-forward left them to the
        sampler (a last token that a longer allowed token extends: `":` before ` "`). The model
        usually writes them, so they open the draft (with a learned confidence, not 1)."""
        if forced is None or not self.config.forced_lead or not can_jump(seq):
            return None
        found = forced.lookup(seq)
        return (list(found.ids), found.text) if found.text and found.ids else None

    def _seed_schema(self, schema: dict | None) -> None:
        """The first sequence of each JSON schema retires the schema's skeleton text into the text
        pool (schema_drafts.py): structure to draft from before any output has written it."""
        if schema is None or not self.config.schema_skeletons or self.proposer.encode is None:
            return
        name = json.dumps(schema, sort_keys=True)
        if name in self._schemas:
            return
        self._schemas.add(name)
        text = skeleton_text(schema)
        if text is not None:
            self.proposer.add_text(self.proposer.encode(text))

    def continuation(self, key: object, drafted_text: str, limit: int) -> Draft | None:
        """What followed the output text and then `drafted_text` elsewhere (None: drafts stop
        where their match ends)."""
        if key is None or not drafted_text or not self.config.continue_drafts:
            return None
        return self.proposer.continue_text(key, drafted_text, limit)

    def token_text(self, token: int) -> str:
        return self.proposer.token_text(token) if self.proposer.token_text is not None else ""

    @contained("learning the step cost")
    def observe_step(self, tokens: int, seconds: float) -> None:
        """A decode step (no prefill chunk) computed `tokens` tokens in `seconds` of CPU time. Each
        token its drafts had accepted saved about the step's time per plain row."""
        self.cost.observe(tokens, seconds)
        verified, accepted = self._step_outcome
        if accepted:
            self.cost.credit(accepted * seconds / max(1, tokens - verified))

    @contained("learning from a verified draft")
    def record(self, seq: Sequence, verified: int, matched: int) -> None:
        self._counts["verified_tokens"] += verified
        self._counts["accepted_tokens"] += matched
        self._step_outcome = (self._step_outcome[0] + verified, self._step_outcome[1] + matched)
        info = seq.draft_info
        if info is None or not verified:
            return
        self.survival.record(info.keys, info.survival, verified, matched)
        key = (seq.request.request_id, seq.index)
        self.recent.record(key, verified, matched, seq.matcher is not None)
        if matched:
            self.resting.fruitful(key)
        else:
            self.resting.fruitless(key)
        self.drafters.record(info.source, verified, matched)

    @contained("forgetting a finished sequence")
    def release(self, seq: Sequence) -> None:
        """The sequence is done: its whole output (the tokens of its last step and the eos
        included, which no plan has seen) stays in the pools for others' drafts."""
        key = (seq.request.request_id, seq.index)
        if self.proposer.knows(key):
            self.proposer.observe(key, seq.request.prompt_token_ids, seq.output_token_ids)
            self.candidates.release(key, seq)
        self.proposer.release(key)
        self.recent.forget(key)
        self.resting.forget(key)
        self.faults.forget(key)
        self._unverified.pop(key, None)
