"""Which draft tokens a step verifies: verification lengths that maximize expected tokens per second.

Theta = tau / T(B): tau = expected accepted tokens (one per sampling sequence plus the survival
a_{r,j} of every admitted draft token), B = tokens in the forward pass, T(B) = the step's seconds
(step_cost.py: measured, or a prior line in rows). Candidates (r, j) are admitted greedily in
descending a (a_{r,j} never increases with j, so prefixes stay prefixes), as in DSpark's
Algorithm 1, and the prefix of that order with the highest Theta is verified (looking a few
candidates past the best, for costs that are not linear): tokens are verified only when their
expected gain pays for their rows, so with no draft worth its rows nothing is verified.
See speculative.py for where the survivals come from.
Knows nothing about drafts, constraints, the model or sampling.
"""

from __future__ import annotations

import heapq

from deepinfer.engine.speculation.step_cost import PriorCost, StepSeconds

# Candidates tried past the best prefix before the search stops (each may cost a constraint walk).
LOOKAHEAD = 6


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


def select_lengths(rows: list, base_tokens: int, base_tau: float, cost: StepSeconds, budget: int,
                   lookahead: int = LOOKAHEAD) -> list[int]:
    """`choose_lengths` over survivals computed on demand: rows[r].peek() is a_{r,j+1} after j
    taken (non-increasing; 0.0: no more), rows[r].take() admits it, or says it cannot be (the
    row ends there: as if it had never been a candidate). A row is asked for a_{r,j+1} only
    once a_{r,j} is admitted. Candidates are admitted in the order of a full sort by (-a, r, j)
    (a k-way merge of the rows: within a row that key increases with j), so the lengths are those
    of sorting every candidate first.

    The answer is the prefix of that order with the highest Theta, looking up to `lookahead`
    candidates past the best so far: a measured T is not linear (on a CPU the second row of a
    single-stream step costs a third of the step, as a GEMM replaces a GEMV, and the next ones
    almost nothing), so a first row that does not pay alone may pay with the rows it opens."""
    heap = []
    for r, row in enumerate(rows):
        a = row.peek()
        if a > 0:
            heap.append((-a, r, 1))
    heapq.heapify(heap)
    admitted: list[tuple[int, int]] = []
    tokens, tau = base_tokens, base_tau
    best_tau, best_seconds, best_count = tau, cost.seconds(tokens), 0
    while heap and budget > 0 and len(admitted) - best_count < max(1, lookahead):
        a, r, j = heap[0]
        a = -a
        if rows[r].take():
            tokens, tau, budget = tokens + 1, tau + a, budget - 1
            admitted.append((r, j))
            seconds = cost.seconds(tokens)
            if tau * best_seconds > best_tau * seconds * (1 + 1e-12):   # Theta rises (a tie is no gain)
                best_tau, best_seconds, best_count = tau, seconds, len(admitted)
            a = rows[r].peek()
        else:
            a = 0.0
        if a > 0:
            heapq.heapreplace(heap, (-a, r, j + 1))
        else:
            heapq.heappop(heap)
    lengths = [0] * len(rows)
    for r, j in admitted[:best_count]:
        lengths[r] = j
    return lengths
