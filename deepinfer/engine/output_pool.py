"""The bounded set of outputs a draft index keeps: running ones, and finished ones within a budget.

Draft indexes (speculation/drafts.py: token n-grams, speculation/text_drafts.py: text suffixes) map
keys to (output, position). An output counts as live while its sequence runs; when it finishes it
is kept for other sequences to draft from, oldest dropped first once finished outputs hold more
than `pool_tokens` tokens. A dropped output is marked dead (lookups skip it) and its index entries
are pruned when the index outgrows `entries_per_token` entries per kept token. Knows nothing about
what the keys are.
"""

from __future__ import annotations

from collections import OrderedDict


class OutputPool:
    """`entries`: key -> (output, position); outputs have `.tokens` and `.alive`."""

    def __init__(self, pool_tokens: int, entries_per_token: int, entries_slack: int) -> None:
        self.pool_tokens = pool_tokens
        self.entries_per_token, self.entries_slack = entries_per_token, entries_slack
        self.entries: dict = {}
        self.finished: OrderedDict = OrderedDict()   # id -> output, oldest first
        self.finished_tokens = 0
        self.live_tokens = 0  # tokens of running outputs registered here

    def retire(self, output) -> None:
        """A sequence finished: keep its output for others, within the token budget."""
        self.live_tokens -= len(output.tokens)
        self.finished[id(output)] = output
        self.finished_tokens += len(output.tokens)
        while self.finished_tokens > self.pool_tokens and self.finished:
            _, old = self.finished.popitem(last=False)
            old.alive = False
            self.finished_tokens -= len(old.tokens)
        kept = self.finished_tokens + self.live_tokens
        if len(self.entries) > self.entries_per_token * kept + self.entries_slack:
            self._prune()

    def _prune(self) -> None:
        self.entries = {k: v for k, v in self.entries.items() if v[0].alive}
