"""When a step's compute raises: find the request that caused it, so that only that one fails.

A step computes its whole batch in one forward pass and one sampling pass, so one bad row (a
model-side fault, a constraint that raises while writing its mask) would otherwise end every
request in the batch. `run_isolated` re-runs the step without suspects instead:

1. the batch's requests are bisected: a half is probed (computed, its result thrown away) and the
   half that still fails is split again, until one request alone reproduces the fault;
2. that request is failed (`fail(request, error)`), and the step runs again without it, so the
   others' step is exactly the batch a run without the bad request would have made (same rows,
   same shapes: the same tokens); another fault repeats from 1 on what is left;
3. a fault that no single request reproduces (only the whole batch triggers it, or it was
   transient) runs the step in two halves, each isolated the same way.

Probing is safe because computing a batch changes nothing a later compute of the same sequences
does not overwrite: the forward pass writes KV only at the positions it computes (committed to the
prefix cache only after the step), the sampler's noise is a function of (seed, position), and a
matcher is rolled back after every mask. Costs nothing while no step fails; a fault costs about
2 log2(requests) probes. Knows nothing about the model, the KV cache or constraints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deepinfer.engine.scheduler import ScheduledSeq

# compute(batch) -> (tokens, logprobs): one per sampled row, rows in batch order
Compute = Callable[[list[ScheduledSeq]], tuple[list[int], list]]
Fail = Callable[[Any, BaseException], None]   # (request, the exception it caused)


@dataclass
class Computed:
    batch: list[ScheduledSeq]          # what was computed: the step's batch without failed requests
    tokens: list[int] = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    faulted: bool = False              # some compute raised (timings of this step mean nothing)


def run_isolated(batch: list[ScheduledSeq], compute: Compute, fail: Fail) -> Computed:
    try:
        return Computed(batch, *compute(batch))
    except Exception as exc:  # noqa: BLE001 - any fault of the step is attributed, never spread
        error = exc
    pending = batch
    while pending:
        culprit = _bisect(_requests(pending), error, lambda requests: _probe(compute, _only(pending, requests)))
        if culprit is None:
            return _in_halves(pending, compute, fail)
        request, cause = culprit
        fail(request, cause)
        pending = [item for item in pending if item.seq.request is not request]
        try:
            return Computed(pending, *compute(pending), faulted=True)
        except Exception as exc:  # noqa: BLE001 - a second bad request in the same step
            error = exc
    return Computed([], faulted=True)


def _bisect(requests: list, error: BaseException, probe: Callable[[list], BaseException | None]):
    """(request, its exception) for one request that alone makes the compute raise, given that
    `requests` together raised `error`; None when no half reproduces the fault."""
    while len(requests) > 1:
        middle = len(requests) // 2
        for half in (requests[:middle], requests[middle:]):
            found = probe(half)
            if found is not None:
                requests, error = half, found
                break
        else:
            return None
    return requests[0], error


def _probe(compute: Compute, batch: list[ScheduledSeq]) -> BaseException | None:
    try:
        compute(batch)
    except Exception as exc:  # noqa: BLE001 - the probe's question is exactly whether it raises
        return exc
    return None


def _in_halves(batch: list[ScheduledSeq], compute: Compute, fail: Fail) -> Computed:
    requests = _requests(batch)
    if len(requests) == 1:  # one request that fails alone only sometimes: it is still the cause
        try:
            return Computed(batch, *compute(batch), faulted=True)
        except Exception as exc:  # noqa: BLE001
            fail(requests[0], exc)
            return Computed([], faulted=True)
    middle = len(requests) // 2
    parts = [run_isolated(_only(batch, half), compute, fail) for half in (requests[:middle], requests[middle:])]
    # The rows of the two computes, concatenated, are the rows of their batches concatenated.
    return Computed(parts[0].batch + parts[1].batch, parts[0].tokens + parts[1].tokens,
                    parts[0].logprobs + parts[1].logprobs, faulted=True)


def _requests(batch: list[ScheduledSeq]) -> list:
    """The batch's requests in batch order (a request's n sequences fail together)."""
    seen: dict[int, Any] = {}
    for item in batch:
        seen.setdefault(id(item.seq.request), item.seq.request)
    return list(seen.values())


def _only(batch: list[ScheduledSeq], requests: list) -> list[ScheduledSeq]:
    keep = {id(request) for request in requests}
    return [item for item in batch if id(item.seq.request) in keep]
