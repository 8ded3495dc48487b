"""Speculative decoding's settings: how much to draft, where drafts come from, how rows are costed.

A plain dataclass. Outputs are the same with any of these values; only the time changes. Figures
are from the 32-request extraction benchmark (SmolLM2-135M, CPU) unless they name another workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer.errors import UserError


@dataclass
class SpeculativeConfig:
    # Free (not forced) draft tokens walked per sequence and step, DSpark's default. Past the
    # fifth, survival is low enough that the cost model rarely admits a token anyway.
    max_draft: int = 5
    # Forced tokens (the constraint's text, confidence 1) a draft may carry beyond max_draft: forced
    # text is drafted in full; this only bounds a pathological constant of thousands of tokens.
    max_forced: int = 256
    # Longest token n-gram matched (each length keeps its own confidence): 4-6 are within 3% of
    # each other at 16-48 requests; 8 was 3% slower at 32. Suffix drafts match any length.
    max_ngram: int = 5
    # A one-token match still drafts; it is the last candidate tried.
    min_ngram: int = 1
    # Shortest suffix-automaton match drafted: a one-token match is the n-gram drafter's job.
    min_suffix_match: int = 2
    # Tokens of finished outputs kept to draft from, in the n-gram/text pools and per group of the
    # suffix pool (bounds memory: ~8 index entries per pooled token).
    pool_tokens: int = 16384
    # Step cost measured on this machine and model (step_cost.py: the forward pass probed per
    # batch shape, the rest fitted online to decode steps' CPU time). Off: the prior line below,
    # so a plan depends only on the requests (the same on every machine and run).
    measured_cost: bool = True
    # The prior's alpha / beta, the step's fixed cost in rows (measured 45-60 rows on SmolLM2
    # float32 at 32 requests). Only used without a measured cost.
    prior_overhead_rows: float = 100.0
    # A sequence whose drafts no plan verified for this many steps gets its next draft's first
    # token verified anyway: without outcomes the survival model could not learn that a drafter
    # improved. Costs at most one row per sequence per this many steps.
    explore_every: int = 16
    # A sequence whose plan verified nothing, or whose draft was rejected at once, sits out the
    # next plans, doubling up to this many (resting.py): planning costs 5-10% of a chat step.
    # 0: every sequence plans every step.
    max_rest: int = 8
    max_pending: int = 16               # sequences with more uncomputed tokens are still in prefill
    # Drafts open with forced text that jump-forward left to the sampler (`_forced_lead`): 46
    # steps instead of 52 and 7% less decode CPU on 1 thread.
    forced_lead: bool = True
    # Drafts go on past their match and past forced text with what followed the text drafted so
    # far in the outputs, then the prompt (draft_walk.py, `continuation`): extraction outputs copy
    # values from the prompt.
    continue_drafts: bool = True
    # The first request of each JSON schema puts the schema's skeleton text in the text pool
    # (schema_drafts.py): requests in lockstep draft structure nobody has written yet.
    schema_skeletons: bool = True
    # Shortest text suffix matched in the outputs' text: 1 (`{` or `,` alone) took 35 steps and
    # 2,007 verified rows against 34 and 1,944.
    text_min_chars: int = 2

    def __post_init__(self) -> None:
        if self.max_draft < 0 or self.max_forced < 0:
            raise UserError("SpeculativeConfig: max_draft and max_forced must be >= 0")
        if not 1 <= self.min_ngram <= self.max_ngram:
            raise UserError("SpeculativeConfig: need 1 <= min_ngram <= max_ngram")
        if self.max_rest < 0:
            raise UserError("SpeculativeConfig: max_rest must be >= 0")
        if self.explore_every < 1:
            raise UserError("SpeculativeConfig: explore_every must be >= 1")
        if self.prior_overhead_rows <= 0:
            raise UserError("SpeculativeConfig: prior_overhead_rows must be > 0")
