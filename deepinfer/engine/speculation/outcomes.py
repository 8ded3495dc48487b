"""What became of drafts: per drafter, how many were verified and how much of them was accepted.

A draft is credited to the drafter of its first free token (forced tokens have none; a draft of
forced tokens only is the forced text's). `DraftInfo` travels with a planned draft
(`Sequence.draft_info`) until verification reports how many of its tokens matched.
Knows nothing about how drafts are made or verified.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deepinfer.engine.speculation.drafts import SOURCE_NAMES, SOURCE_FORCED


@dataclass
class DraftInfo:
    keys: list            # confidence key per drafted token (None: forced)
    survival: list[float]  # the plan's a_j per drafted token

    @property
    def source(self) -> int:
        return next((key[0] for key in self.keys if key is not None), SOURCE_FORCED)


@dataclass
class DrafterOutcome:
    drafts: int = 0        # drafts verified
    verified: int = 0      # their tokens verified
    accepted: int = 0      # of which accepted

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.verified if self.verified else 0.0

    @property
    def mean_accepted(self) -> float:
        """Accepted tokens per verified draft."""
        return self.accepted / self.drafts if self.drafts else 0.0


@dataclass
class DrafterStats:
    by_source: dict[int, DrafterOutcome] = field(default_factory=dict)

    def record(self, source: int, verified: int, accepted: int) -> None:
        outcome = self.by_source.setdefault(source, DrafterOutcome())
        outcome.drafts += 1
        outcome.verified += verified
        outcome.accepted += accepted

    def summary(self) -> dict[str, dict[str, float]]:
        """{drafter name: drafts, verified, accepted, acceptance_rate, mean_accepted}."""
        return {SOURCE_NAMES[source]: {"drafts": o.drafts, "verified": o.verified, "accepted": o.accepted,
                                       "acceptance_rate": round(o.acceptance_rate, 4),
                                       "mean_accepted": round(o.mean_accepted, 3)}
                for source, o in sorted(self.by_source.items())}
