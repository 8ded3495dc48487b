"""Which draft tokens a step verifies: verification lengths that maximize expected tokens per second.

Theta = tau / T(B): tau = expected accepted tokens (one per sampling sequence plus the survival
a_{r,j} of every admitted draft token), B = tokens in the forward pass, T(B) = the step's seconds
(step_cost.py: measured, or a prior line in rows). Candidates (r, j) are admitted greedily in
descending a (a_{r,j} never increases with j, so prefixes stay prefixes), and the search stops at
the first one that does not raise Theta (DSpark's Algorithm 1): a token is verified only when its
expected gain pays for its row, so with no draft worth its row nothing is verified.
See speculative.py for where the survivals come from.
Knows nothing about drafts, constraints, the model or sampling.
"""

from __future__ import annotations

import heapq

from deepinfer.engine.speculation.step_cost import PriorCost, StepSeconds


def choose_lengths(survival: list[list[float]], base_tokens: int, base_tau: float, cost: StepSeconds | float,
                   budget: int) -> list[int]:
    """Verification length per sequence maximizing tau / T(B) (DSpark Algorithm 1).

    survival[r][j-1] = a_{r,j}; base_tokens / base_tau: B and tau with no draft verified; cost: T,
    or a number: the overhead in rows of T(B) = overhead + B."""
    cost = PriorCost(cost) if isinstance(cost, (int, float)) else cost
    return select_lengths([_ListRow(row) for row in survival], base_tokens, base_tau, cost, budget)


class _ListRow:
    def __init__(self, row: list[float]) -> None:
        self.row, self.j = row, 0

    def peek(self) -> float:
        return self.row[self.j] if self.j < len(self.row) else 0.0

    def take(self) -> bool:
        self.j += 1
        return True


def select_lengths(rows: list, base_tokens: int, base_tau: float, cost: StepSeconds, budget: int) -> list[int]:
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
    seconds = cost.seconds(tokens)
    while heap and budget > 0:
        a, r, j = heap[0]
        a = -a
        more = cost.seconds(tokens + 1)
        if (tau + a) * seconds <= tau * more:
            break
        if rows[r].take():
            lengths[r], tokens, tau, budget, seconds = j, tokens + 1, tau + a, budget - 1, more
            a = rows[r].peek()
        else:
            a = 0.0
        if a > 0:
            heapq.heapreplace(heap, (-a, r, j + 1))
        else:
            heapq.heappop(heap)
    return lengths
