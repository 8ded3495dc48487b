"""Confidence-scheduled speculative decoding: how many draft tokens each sequence verifies.

Drafts come from `drafts.NgramProposer` (one-hot, deterministic). The engine verifies them with
"sampled-verify": every verified row is sampled exactly as the non-speculative path would sample
that position (same mask, penalties, seed and position), and a draft token is kept iff it equals
that sample. Outputs are therefore the non-speculative outputs whatever is drafted or verified;
only the speed depends on this module (and, outside batch-invariant mode, the rounding of logits).

Per step (`Speculator.plan`), for each decoding sequence:
1. propose a draft (at most `max_draft` tokens, capped by max_tokens and the context length).
   Where the constraint forces text that jump-forward left to the sampler (its last token could
   be extended: `":` before ` "`), the draft opens with those tokens, continued by what followed
   the same text in outputs so far (`NgramProposer.after_text`). On the extraction benchmark
   (1 thread) this cut the steps from 52 to 46 and the decode steps' CPU by ~7% (`forced_lead`);
2. walk the constraint's matcher through it (`guided.advance`, then `guided.undo`): cut it at
   the first token the constraint refuses (confidence 0: it could never be sampled) and after an
   eos/stop id. With jump-forward on, where the constraint forces text after a draft token, the
   draft must continue with exactly the tokens jump-forward would append (`forced_tokens`), or it
   is cut there: those forced tokens have confidence 1 and do not count against `max_draft`.
   Walks are lazy (draft_walk.py): a draft is walked only as far as step 4 asks, after every
   sequence's new tokens are in the draft pools (so every walk sees this step's outputs);
3. confidence of the i-th free (not forced) draft token: c = P(accepted | all before accepted), a
   Beta-smoothed acceptance rate per (source own/pool, matched n-gram length, i, greedy or
   sampled), learned online from verification results (`record`); survival a_j = prod c up to j.
4. verification lengths maximize expected tokens per second Theta = tau / cost(B), tau = expected
   accepted tokens (one per sequence plus the sum of admitted a_j), B = tokens in the forward pass.
   cost(B) = alpha + beta * B with alpha/beta = `prior_overhead_rows` (200) by default, so that a
   plan depends on the requests only, never on timing (reproducible runs outside batch-invariant
   mode too). `fit_step_cost=True` instead fits the model online (`StepCost`) to the CPU time of the
   engine's decode steps (no prefill chunk in them; CPU rather than wall time, so that other
   processes do not skew it), starting from that prior: on the extraction benchmark at 1 thread
   the fit settles near 43 rows, yet a generous prior took 52-54 steps instead of 57 and ~4% less
   CPU over 5 runs (early drafts shorten the slowest sequence, which sets the step count).
   Only the ratio alpha/beta matters: adding one row with survival a raises Theta iff
   a > tau / (B + alpha / beta). Candidates (r, j) are
   admitted greedily in descending a (a_j never increases with j, so prefixes stay prefixes) and
   the search stops at the first one that does not raise Theta (DSpark's Algorithm 1; with
   sampled-verify the early stop is not needed for exactness, and Theta is unimodal here anyway).
   After a burst (fewer sequences sampling than recently) the overhead grows (`tail_boost`):
   the last sequences set the run's end, so their drafts are worth more rows.
   The candidates come from a merge of the rows (draft_lengths.py), which asks a row for a_{j+1}
   only once a_j is admitted: the lengths of sorting all candidates, without walking them all.
Knows nothing about the model, the KV cache or sampling arithmetic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from deepinfer.engine.speculation.draft_lengths import StepCost, select_lengths
from deepinfer.engine.speculation.draft_walk import DraftWalk, WalkSurvival
from deepinfer.engine.speculation.drafts import Draft, NgramProposer
from deepinfer.engine.speculation.jump_forward import ForcedText, can_jump
from deepinfer.engine.speculation.schema_drafts import skeleton_text
from deepinfer.engine.sequence import Sequence


@dataclass
class SpeculativeConfig:
    """How much to draft and verify. Every figure below is from the 32-request extraction
    benchmark (SmolLM2-135M float32, CPU) unless it names another workload; outputs are the
    same with any of these values, only the time changes."""

    # Free (not forced) draft tokens walked per sequence and step: 6 took the fewest steps at
    # 16/32/48 requests (32/36/37; 4 took 33/38/41) and ~1% less CPU than 5.
    max_draft: int = 6
    # Longest token n-gram matched (each length keeps its own acceptance statistics): 4-6 are
    # within 3% of each other at 16-48 requests (5 best at 16, within 1% at 32 and 48); 8 was 3%
    # slower at 32.
    max_ngram: int = 5
    # A one-token match still drafts; `_propose` tries it last, after longer and text matches.
    min_ngram: int = 1
    # Tokens of finished outputs kept to draft from (bounds the pools' memory: ~8 index entries each).
    pool_tokens: int = 16384
    # alpha / beta, the step's fixed cost in rows, before (or without) a fitted cost model. Measured
    # 45-60 rows; with long, plentiful drafts 100 ran 9.05 s on 2 threads against 9.25 s with 200
    # (rejected rows cost more than the steps they save) and within 0.3% of 60, in a step fewer.
    prior_overhead_rows: float = 100.0
    # After a burst, the sequences still running set the end of the run: the overhead is scaled by
    # (peak / sampling) ** tail_boost. 2 took 36 steps instead of 38 and 1.3% less CPU; 1.5 left
    # the last straggler without drafts 2 steps longer, 3 and more only added rejected rows.
    tail_boost: float = 2.0
    # The prior, capped at this many rows per sequence of the batch (+1): in a small batch each row
    # is a large share of the step. One request, 2 threads: prose 33 tok/s against 28 uncapped and
    # 34 without speculation, code 53 against 34; the 32-request benchmark never reaches the cap.
    overhead_rows_per_sequence: float = 4.0
    # Fading of the peak of sampling sequences: 0.95 or 0.9 forgot the burst early and left the
    # last straggler without drafts 2 steps longer.
    peak_decay: float = 0.97
    max_pending: int = 16               # sequences with more uncomputed tokens are still in prefill
    max_forced: int = 16                # forced tokens a draft may carry beyond max_draft
    # Fit alpha / beta to measured step times instead. Off: plans would depend on timing, so
    # outside batch-invariant mode the same requests could round differently from run to run.
    fit_step_cost: bool = False
    # Drafts open with forced text that jump-forward left to the sampler (`_forced_lead`): 46
    # steps instead of 52 and 7% less decode CPU on 1 thread.
    forced_lead: bool = True
    # Drafts go on past their n-gram match and past forced text with what followed the text drafted
    # so far in the outputs, then the prompt (draft_walk.py, `continuation`): extraction outputs
    # copy values from the prompt.
    continue_drafts: bool = True
    # The first request of each JSON schema puts the schema's skeleton text in the text pool
    # (schema_drafts.py): requests in lockstep draft structure nobody has written yet.
    schema_skeletons: bool = True
    # Shortest text suffix matched in the outputs' text: 1 (`{` or `,` alone) took 35 steps and
    # 2,007 verified rows against 34 and 1,944.
    text_min_chars: int = 2


class AcceptanceStats:
    """Beta(1, 1)-smoothed conditional acceptance rates per draft context."""

    def __init__(self) -> None:
        self.counts: dict[tuple, list[int]] = {}   # key -> [accepted, trials]

    @staticmethod
    def key(draft: Draft, position: int, greedy: bool, text: str = "") -> tuple:
        """Stats are kept per (source, match length, position, greedy, structural): a token with no
        letter or digit (`\n `, `",`) is usually formatting, which outputs repeat far more
        reliably than words (after `",` the newline is near certain, a word after `Ada` is not)."""
        return draft.source, draft.ngram, position, greedy, not any(c.isalnum() for c in text)

    def confidence(self, key: tuple | None) -> float:
        if key is None:  # a forced token
            return 1.0
        accepted, trials = self.counts.get(key, (0, 0))
        return (accepted + 1) / (trials + 2)

    def record(self, keys: list[tuple | None], verified: int, matched: int) -> None:
        """`verified` draft positions (keys[j - 1]: None if forced) were checked; the first
        `matched` were confirmed."""
        for j in range(1, min(verified, matched + 1) + 1):  # positions after a miss were no trials
            if keys[j - 1] is None:
                continue
            counts = self.counts.setdefault(keys[j - 1], [0, 0])
            counts[0] += j <= matched
            counts[1] += 1
            if counts[1] >= 4096:  # forget slowly: acceptance changes with the workload
                counts[0] //= 2
                counts[1] //= 2


class Speculator:
    """Proposes, truncates and schedules drafts; learns acceptance and step cost."""

    def __init__(self, config: SpeculativeConfig, eos_ids: frozenset[int],
                 token_text: Callable[[int], str] | None = None,
                 encode: Callable[[str], list[int]] | None = None) -> None:
        self.config = config
        self.eos_ids = eos_ids
        self.proposer = NgramProposer(config.max_ngram, config.min_ngram, config.pool_tokens, token_text, encode,
                                      config.text_min_chars)
        self.stats = AcceptanceStats()
        self.cost = StepCost(config.prior_overhead_rows)
        self.counters = {"draft_tokens": 0, "verified_tokens": 0, "accepted_tokens": 0}
        self._schemas: set[str] = set()   # JSON schemas whose skeleton is in the text pool
        self._peak = 0.0                    # most sequences sampling lately (tail_boost)

    def plan(self, running: list[Sequence], budget: int, forced: ForcedText | None, max_model_len: int,
             waiting: int = 0) -> None:
        """Set `seq.draft` (the tokens to verify this step) for every running sequence; `waiting`
        requests are not admitted yet (they count in the batch size)."""
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
            if not self.proposer.knows(key):
                self._seed_schema(seq.params.json_schema)
            self.proposer.observe(key, seq.request.prompt_token_ids, seq.output_token_ids)
            limit = min(seq.params.max_tokens - len(seq.output_token_ids) - 1, max_model_len - seq.num_tokens - 1)
            limit = min(limit, self.config.max_draft + self.config.max_forced)
            lead = self._forced_lead(seq, forced)
            draft = self.proposer.after_text(key, *lead, limit) if lead else self._propose(key, limit)
            if draft is not None:
                walks.append(DraftWalk(self, seq, draft, forced, key, limit))
        self._peak = max(self._peak * self.config.peak_decay, float(sampling))
        if not walks:
            return
        try:
            lengths = select_lengths([WalkSurvival(walk, self.stats.confidence) for walk in walks],
                                     base_tokens, float(sampling),
                                     self._overhead(sampling, len(running) + waiting), budget - base_tokens)
        finally:
            for walk in walks:
                walk.close()
        for walk, length in zip(walks, lengths):
            if length:
                walk.seq.draft, walk.seq.draft_info = walk.keep[:length], walk.keys
                self.counters["draft_tokens"] += length

    def _overhead(self, sampling: int, running: int = 0) -> float:
        """alpha / beta for this step's plan: the prior capped for a small batch (`running`:
        requests admitted or waiting), raised while fewer sequences sample than recently
        (`tail_boost`); a function of the requests only, like the prior."""
        overhead = self.cost.overhead_rows()
        if not self.config.fit_step_cost:
            batch = max(self._peak, running)  # (requests in prefill or waiting count: they will sample)
            overhead = min(overhead, self.config.overhead_rows_per_sequence * (batch + 1))
        if self.config.tail_boost and sampling:
            overhead *= (self._peak / sampling) ** self.config.tail_boost
        return overhead

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

    def _propose(self, key: object, limit: int) -> Draft | None:
        """Token n-grams of two or more tokens, then text matches (outputs, prompt), then single
        tokens: a one-token match (`,` or a newline) most often continues with the prompt's prose."""
        if not self.config.continue_drafts:
            return self.proposer.propose(key, limit)
        return (self.proposer.propose(key, limit, min_ngram=2) or self.proposer.continue_text(key, "", limit)
                or self.proposer.propose(key, limit))

    def continuation(self, key: object, drafted_text: str, limit: int) -> Draft | None:
        """What followed the output text and then `drafted_text` elsewhere (None: drafts stop
        where their match ends)."""
        if key is None or not drafted_text or not self.config.continue_drafts:
            return None
        return self.proposer.continue_text(key, drafted_text, limit)

    def token_text(self, token: int) -> str:
        return self.proposer.token_text(token) if self.proposer.token_text is not None else ""

    def record(self, seq: Sequence, verified: int, matched: int) -> None:
        self.counters["verified_tokens"] += verified
        self.counters["accepted_tokens"] += matched
        if seq.draft_info is not None and verified:
            self.stats.record(seq.draft_info, verified, matched)

    def release(self, seq: Sequence) -> None:
        """The sequence is done: its whole output (the tokens of its last step and the eos
        included, which no plan has seen) stays in the pool for others' drafts."""
        key = (seq.request.request_id, seq.index)
        if self.proposer.knows(key):
            self.proposer.observe(key, seq.request.prompt_token_ids, seq.output_token_ids)
        self.proposer.release(key)
