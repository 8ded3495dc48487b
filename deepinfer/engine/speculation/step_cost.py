"""What a step costs as a function of the tokens it computes, measured on this machine and model.

A plan verifies a draft token only if it raises the expected accepted tokens per second of step
time (draft_lengths.select_lengths), so it needs T(B), the seconds of a step that computes B tokens,
at the batch it plans (B0 tokens without drafts) and above it:

    T(B) = F(B) + a + b * B

- F(B): one forward pass of B tokens, every row projected to logits and argmaxed, timed by the
  engine's probe (engine/forward_probe.py) at points of `GRID`, lazily: a point is probed the first
  time a plan needs it (`prepare`, a few probes a step), then kept. Probing spends at most
  `PROBE_SHARE` of the CPU time accepted drafts saved so far, after a first `PROBE_ALLOWANCE`
  (`credit`): probing every point when first needed made a cold 16-request extraction batch take
  7.6 s with speculation against 4.9 s without, and a cold 16-stream chat batch, where drafts
  save nothing, 3.8 s against 3.3 s (SmolLM2, 2 threads). Past the last probed point F grows at least as
  fast as the mean per-row time so far, t_last / (1 + B_last): unprobed rows look dearer than
  they are, and plans verify less until probes catch up. Between points F is linear. The probe sees the kernels' real shape
  effects (bfloat16 GEMMs change kernels past 32 rows here, a single row is a GEMV, ...).
- a + b * B: what a real step costs beyond that pass (masks, penalties, sampling, the step loop's
  Python per sequence), fitted by exponentially weighted least squares to the residuals
  T_observed - F(B) of the engine's decode steps (`observe`), shrunk towards b = 0 while the
  observed B vary too little to show a slope.
Times are CPU seconds of this process: other processes' load on a shared machine does not skew
them (a step's threads all count, so a multi-threaded GEMM weighs more than single-threaded
Python: the model errs towards verifying less).

Without a probe, `PriorCost` stands in: T(B) = overhead_rows + B in rows, a function of the
requests only (plans are then reproducible whatever the machine's timing).
Knows nothing about drafts, constraints or the model: the probe is a callback.
"""

from __future__ import annotations

import bisect
import time
from typing import Callable, Protocol

# Pass sizes probed (tokens). Dense where kernels change shape (1-64 rows), sparse above.
GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
PROBE_SHARE = 0.25       # of the CPU seconds accepted draft tokens saved so far
PROBE_ALLOWANCE = 0.05   # CPU seconds a cold engine may probe before drafts saved any


class StepSeconds(Protocol):
    def seconds(self, tokens: int) -> float: ...


class PriorCost:
    """T(B) = overhead_rows + B: the step's fixed cost in rows, then one unit per row."""

    def __init__(self, overhead_rows: float) -> None:
        self.overhead_rows = overhead_rows

    def seconds(self, tokens: int) -> float:
        return self.overhead_rows + tokens

    def prepare(self, low: int, high: int) -> None:
        return None

    def observe(self, tokens: int, seconds: float) -> None:
        return None

    def credit(self, seconds: float) -> None:
        return None


class ForwardCurve:
    """F(B) from probed points (kept across speculators: the engine owns one per model)."""

    def __init__(self, probe: Callable[[int], float | None], max_tokens: int) -> None:
        self.probe, self.max_tokens = probe, max_tokens
        self.points: dict[int, float] = {}
        self.refused: set[int] = set()   # sizes the probe could not run (no free KV blocks)
        self._sizes: list[int] = []
        self._seconds: list[float] = []
        self.spent = 0.0     # CPU seconds spent probing
        self.saved = 0.0     # CPU seconds accepted draft tokens saved (the probing budget's base)

    def may_probe(self) -> bool:
        return self.spent <= PROBE_ALLOWANCE + PROBE_SHARE * self.saved

    def largest(self) -> int:
        """The largest probed pass size (0: none)."""
        return self._sizes[-1] if self._sizes else 0

    def measured(self) -> list[tuple[int, float]]:
        return list(zip(self._sizes, self._seconds))

    def needed(self, low: int, high: int) -> list[int]:
        """Grid points bracketing [low, high] not probed yet, lowest first."""
        sizes = [g for g in GRID if g <= self.max_tokens] or [1]
        first = max(0, bisect.bisect_right(sizes, low) - 1)
        last = min(len(sizes) - 1, bisect.bisect_left(sizes, high))
        return [g for g in sizes[first:last + 1] if g not in self.points and g not in self.refused]

    def measure(self, tokens: int) -> None:
        start = time.process_time()
        seconds = self.probe(tokens)
        self.spent += time.process_time() - start
        if seconds is None:
            self.refused.add(tokens)
        else:
            self.points[tokens] = max(seconds, 1e-7)
            sizes, probed = map(list, zip(*sorted(self.points.items())))
            self._sizes, self._seconds = sizes, lower_envelope(probed)

    def __call__(self, tokens: int) -> float | None:
        """F(tokens) by linear interpolation (None: nothing probed yet)."""
        sizes, seconds = self._sizes, self._seconds
        n = len(sizes)
        if not n:
            return None
        i = bisect.bisect_left(sizes, tokens)
        if i < n and sizes[i] == tokens:
            return seconds[i]
        if n == 1:  # one point: proportional to (1 + tokens), the shape of a per-row cost
            return seconds[0] * (1 + tokens) / (1 + sizes[0])
        lo = min(max(i - 1, 0), n - 2)   # the segment around `tokens`, or the first / last one
        b0, t0, b1, t1 = sizes[lo], seconds[lo], sizes[lo + 1], seconds[lo + 1]
        slope = max(0.0, (t1 - t0) / (b1 - b0))
        if i == n:   # past the last probed point: no cheaper per row than the mean so far
            return t1 + max(slope, t1 / (1 + b1)) * (tokens - b1)
        return max(1e-7, t0 + slope * (tokens - b0))


def lower_envelope(seconds: list[float]) -> list[float]:
    """Each point's time capped by every larger pass's: a pass of fewer rows costs no more than one
    of more, so a probe slowed by a passing disturbance (F(3) = 43 ms between F(2) = 26 and
    F(4) = 33, measured here under load) cannot make its size look dear for the engine's life."""
    envelope, lowest = list(seconds), float("inf")
    for i in range(len(envelope) - 1, -1, -1):
        lowest = envelope[i] = min(envelope[i], lowest)
    return envelope


class MeasuredCost:
    """T(B) = F(B) + a + b * B (see the module docstring)."""

    def __init__(self, curve: ForwardCurve, probes_per_step: int = 3, decay: float = 0.97,
                 slope_prior: float = 64.0) -> None:
        self.curve, self.probes_per_step, self.decay = curve, probes_per_step, decay
        self.slope_prior = slope_prior   # pseudo-observations' spread of B (tokens^2 units) holding b at 0
        self.w = self.sb = self.sr = self.sbb = self.sbr = 0.0
        self._fixed, self._per_token = 0.0, 0.0   # residual() as of the last prepare

    def prepare(self, low: int, high: int) -> None:
        """Before a plan: probe up to `probes_per_step` missing grid points that T(low..high)
        needs, and take the residual fit as it stands (one solve per plan, not per candidate)."""
        for tokens in self.curve.needed(low, high)[:self.probes_per_step]:
            if not self.curve.may_probe():
                break
            self.curve.measure(tokens)
        self._fixed, self._per_token = self.residual()

    def forward(self, tokens: int) -> float:
        f = self.curve(tokens)
        return f if f is not None else 1e-3 * (1 + tokens)

    def observe(self, tokens: int, seconds: float) -> None:
        """A decode step of `tokens` tokens took `seconds`."""
        if self.curve(tokens) is None or tokens > self.curve.largest():
            return   # F is a guess there: its error must not pass for the rest of the step
        r, d = seconds - self.forward(tokens), self.decay
        self.w, self.sb, self.sr = d * self.w + 1, d * self.sb + tokens, d * self.sr + r
        self.sbb, self.sbr = d * self.sbb + tokens * tokens, d * self.sbr + tokens * r

    def credit(self, seconds: float) -> None:
        """Accepted draft tokens saved `seconds` of step time (what probing may spend a share of)."""
        self.curve.saved += seconds

    def residual(self) -> tuple[float, float]:
        """(a, b): the step's cost beyond the forward pass, fixed and per token."""
        if self.w < 1:
            return 0.0, 0.0
        mb, mr = self.sb / self.w, self.sr / self.w
        var = self.sbb / self.w - mb * mb
        b = (self.sbr / self.w - mb * mr) / (var + self.slope_prior / self.w)
        b = max(b, 0.0)   # a row never makes the rest of the step cheaper
        return mr - b * mb, b

    def seconds(self, tokens: int) -> float:
        return max(1e-7, self.forward(tokens) + self._fixed + self._per_token * tokens)
