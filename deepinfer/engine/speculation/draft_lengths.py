"""Which draft tokens a step verifies: verification lengths that maximize expected tokens per second.

Theta = tau / (overhead + B): tau = expected accepted tokens (one per sampling sequence plus the
survival a_{r,j} of every admitted draft token), B = tokens in the forward pass, overhead = the
step's fixed cost in rows. Candidates (r, j) are admitted greedily in descending a (a_{r,j} never
increases with j, so prefixes stay prefixes), and the search stops at the first one that does not
raise Theta (DSpark's Algorithm 1). See speculative.py for where the survivals come from.
`StepCost` fits the step-cost line (alpha + beta * B) when `fit_step_cost` is on.
Knows nothing about drafts, constraints, the model or sampling.
"""

from __future__ import annotations

import heapq


def choose_lengths(survival: list[list[float]], base_tokens: int, base_tau: float, overhead_rows: float,
                   budget: int) -> list[int]:
    """Verification length per sequence maximizing tau / (overhead + B) (DSpark Algorithm 1).

    survival[r][j-1] = a_{r,j}; base_tokens / base_tau: B and tau with no draft verified."""
    return select_lengths([_ListRow(row) for row in survival], base_tokens, base_tau, overhead_rows, budget)


class _ListRow:
    def __init__(self, row: list[float]) -> None:
        self.row, self.j = row, 0

    def peek(self) -> float:
        return self.row[self.j] if self.j < len(self.row) else 0.0

    def take(self) -> bool:
        self.j += 1
        return True


def select_lengths(rows: list, base_tokens: int, base_tau: float, overhead_rows: float, budget: int) -> list[int]:
    """`choose_lengths` over survivals computed on demand: rows[r].peek() is a_{r,j+1} after j
    taken (non-increasing; 0.0: no more), rows[r].take() admits it, or says it cannot be (the
    row ends there: as if it had never been a candidate). A row is asked for a_{r,j+1} only
    once a_{r,j} is admitted. Candidates are admitted in the order of a full sort by (-a, r, j)
    (a k-way merge of the rows: within a row that key increases with j), so the lengths are those
    of sorting every candidate first; a refused candidate changes nothing, since every candidate
    after the first that does not raise Theta (a smaller or equal a) would not raise it either."""
    heap = []
    for r, row in enumerate(rows):
        a = row.peek()
        if a > 0:
            heap.append((-a, r, 1))
    heapq.heapify(heap)
    lengths = [0] * len(rows)
    tokens, tau = base_tokens, base_tau
    while heap and budget > 0:
        a, r, j = heap[0]
        a = -a
        if (tau + a) * (overhead_rows + tokens) <= tau * (overhead_rows + tokens + 1):
            break
        if rows[r].take():
            lengths[r], tokens, tau, budget = j, tokens + 1, tau + a, budget - 1
            a = rows[r].peek()
        else:
            a = 0.0
        if a > 0:
            heapq.heapreplace(heap, (-a, r, j + 1))
        else:
            heapq.heappop(heap)
    return lengths


class StepCost:
    """cost(B) = alpha + beta * B seconds per step, fitted by exponentially weighted least squares."""

    def __init__(self, prior_overhead_rows: float, decay: float = 0.98) -> None:
        self.prior, self.decay = prior_overhead_rows, decay
        self.w = self.sb = self.st = self.sbb = self.sbt = 0.0

    def observe(self, tokens: int, seconds: float) -> None:
        d = self.decay
        self.w, self.sb, self.st = d * self.w + 1, d * self.sb + tokens, d * self.st + seconds
        self.sbb, self.sbt = d * self.sbb + tokens * tokens, d * self.sbt + tokens * seconds

    def overhead_rows(self) -> float:
        """alpha / beta: the fixed cost of a step, in rows."""
        if self.w < 8:
            return self.prior
        mb, mt = self.sb / self.w, self.st / self.w
        var = self.sbb / self.w - mb * mb
        if var < 16.0:  # too little spread in B to see the slope
            return self.prior
        beta = (self.sbt / self.w - mb * mt) / var
        alpha = mt - beta * mb
        if beta <= 0:
            return 4096.0
        return min(4096.0, max(1.0, alpha / beta))
