"""Which sequences a plan skips: those whose recent drafts earned nothing rest for a while.

Planning is not free: a sequence's walk brings its draft indexes up to date, asks every drafter
for a proposal and walks the constraint through the best one (~0.2 ms a sequence here, SmolLM2
on 2 threads: 5-10% of a chat step at 4-16 streams). The cost model decides which draft rows pay
for their forward-pass rows; it cannot see its own cost. So a sequence whose plan verified
nothing, or whose verified draft was rejected at its first token, sits out the next plans, for a
number that doubles with each such outcome up to `max_rest` and drops back to zero at the first
accepted token. Free chat, where drafts rarely survive, then plans about once every `max_rest`
steps per sequence; extraction, where copied values and structure are accepted, plans every step.
A resting sequence's indexes catch up when it next plans (they take appended tokens in bulk).
Outputs are unchanged: resting only decides where drafts are looked for.
Knows nothing about drafts, constraints or the model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RestState:
    wake_at: int = 0     # the first plan index at which the sequence plans again
    length: int = 0      # plans it sits out after its next fruitless one (0: none yet)


class Resting:
    def __init__(self, max_rest: int) -> None:
        self.max_rest = max_rest
        self.plans = 0                       # plans so far (the clock of `wake_at`)
        self._state: dict[object, RestState] = {}
        self.skipped = 0                     # sequence-plans skipped (engine stats)

    def tick(self) -> None:
        self.plans += 1

    def resting(self, key: object) -> bool:
        state = self._state.get(key)
        if state is not None and state.wake_at > self.plans:
            self.skipped += 1
            return True
        return False

    def fruitless(self, key: object) -> None:
        """The sequence's plan verified nothing, or nothing of what it verified was accepted."""
        if self.max_rest <= 0:
            return
        state = self._state.setdefault(key, RestState())
        state.length = min(self.max_rest, max(1, 2 * state.length))
        state.wake_at = self.plans + 1 + state.length

    def fruitful(self, key: object) -> None:
        """A drafted token of the sequence was accepted: it plans every step again."""
        self._state.pop(key, None)

    def forget(self, key: object) -> None:
        self._state.pop(key, None)
