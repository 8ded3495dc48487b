"""Which drafter a sequence's draft comes from this step: every drafter proposes, the one with the
most expected accepted tokens wins.

Drafters: the suffix automaton over the sequence's own prompt + output and over finished outputs
of its group (suffix_drafts.py), token n-grams (own context, then the pool of outputs), and text
continuations (outputs' text, then the prompt's: drafts.py `continue_text`). Each proposal is
scored by sum_j a_j over its first `max_draft` tokens, with the confidences of the survival model
(confidence.py) at the keys the walk would give them (the constraint is not walked here: a token
the constraint refuses ends the walk later, whichever drafter proposed it). Ties go to the
earlier drafter in that order.

A sequence's group is its constraint (kind and text), or without one its first prompt tokens (a
shared template or system prompt): the suffix pool keeps finished outputs per group.
Knows nothing about models, masks or sampling.
"""

from __future__ import annotations

import json
from typing import Callable

from deepinfer.engine.sequence import Sequence
from deepinfer.engine.speculation.drafts import (SOURCE_SUFFIX_OWN, SOURCE_SUFFIX_POOL, Draft,
                                                 NgramProposer)
from deepinfer.engine.speculation.suffix_drafts import OwnSuffixes, SuffixPool

PREFIX_GROUP_TOKENS = 32   # prompt tokens that name an unconstrained request's group


def group_of(seq: Sequence) -> tuple:
    constraint = seq.params.constraint
    if constraint is not None:
        kind, spec = constraint
        text = json.dumps(spec, sort_keys=True) if isinstance(spec, dict) else str(spec)
        return ("constraint", kind, text)
    prompt = seq.request.prompt_token_ids
    return ("prompt", tuple(prompt[:min(PREFIX_GROUP_TOKENS, len(prompt) // 2)]))


class DraftCandidates:
    def __init__(self, proposer: NgramProposer, pool_tokens: int, min_suffix_match: int,
                 continue_drafts: bool) -> None:
        self.proposer = proposer
        self.own = OwnSuffixes()
        self.pool = SuffixPool(pool_tokens)
        self.min_suffix_match, self.continue_drafts = min_suffix_match, continue_drafts
        self._groups: dict[object, tuple] = {}

    def observe(self, key: object, seq: Sequence) -> None:
        if key not in self._groups:
            self._groups[key] = group_of(seq)
        self.own.observe(key, seq.request.prompt_token_ids, seq.output_token_ids)

    def proposals(self, key: object, seq: Sequence, limit: int) -> list[Draft]:
        """Every drafter's proposal for the sequence, in tie-breaking order."""
        found = []
        own = self.own.propose(key, limit, self.min_suffix_match)
        if own is not None:
            found.append(Draft(own[0], SOURCE_SUFFIX_OWN, own[1]))
        pooled = self.pool.propose(key, self._groups.get(key), seq.token_ids, limit, self.min_suffix_match)
        if pooled is not None:
            found.append(Draft(pooled[0], SOURCE_SUFFIX_POOL, pooled[1]))
        if not self.continue_drafts:
            return found + [d for d in (self.proposer.propose(key, limit),) if d is not None]
        for draft in (self.proposer.propose(key, limit, min_ngram=2), self.proposer.continue_text(key, "", limit),
                      self.proposer.propose(key, limit)):
            if draft is not None:
                found.append(draft)
        return found

    def best(self, key: object, seq: Sequence, limit: int, score: Callable[[Draft], float]) -> Draft | None:
        best, best_score = None, 0.0
        for draft in self.proposals(key, seq, limit):
            value = score(draft)
            if value > best_score:
                best, best_score = draft, value
        return best

    def release(self, key: object, seq: Sequence) -> None:
        """The sequence finished: its output joins its group's suffix pool."""
        self.pool.add(self._groups.pop(key, None), seq.output_token_ids)
        self.pool.forget(key)
        self.own.release(key)
