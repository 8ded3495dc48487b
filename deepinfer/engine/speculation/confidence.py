"""How likely a draft token is to be accepted, learned from the engine's own verification outcomes.

A draft token's confidence c = P(accepted | every draft token before it accepted); its survival
a_j = c_1 * ... * c_j is what the plan counts as expected accepted tokens (draft_lengths.py).
Each free draft position is described by a `key` (a tuple, so it can be counted and cached):

    (drafter, match length bucket, position, greedy, structural token, constraint context,
     recent acceptance of the request)

- drafter (drafts.SOURCE_*) and how long a match it continued (tokens, or a bucket of characters);
- the position among the draft's free tokens (forced tokens, c = 1, have no key);
- greedy or sampled; whether the token's text has no letter or digit (formatting: `",\n  "`);
- the constraint's branching there: `FREE` (unconstrained), `CONSTRAINED`, or `AFTER_FORCED`
  (the constraint had pinned the text just before: what follows starts a value);
- the request's own recent acceptance, as a decile of an exponential average (`RecentAcceptance`).

c is a binned estimate shrunk towards a logistic regression over the key's features: a bin seen
often enough is its own acceptance rate, a rare one is the regression's guess from similar bins
(c = (accepted + k * p_lr) / (trials + k)). Free text and constrained output have a regression
each: a drafter that copies extraction values well says little about free text, and with shared
weights the first chat requests after an extraction batch verified drafts that did not pay
(SmolLM2, 4 chat streams after extraction: 102 verified draft tokens, 8 accepted). Both update online: outcomes recorded during a step
are fitted at the next plan (`refit`, one vectorized AdaGrad step), and c is cached per key
between fits. `Calibration` keeps predicted against observed survival by decile (its expected
calibration error is what the benchmark reports). Knows nothing about drafts' tokens, the
constraint itself, the model or sampling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

FREE, CONSTRAINED, AFTER_FORCED = 0, 1, 2
NUM_SOURCES = 8          # drafts.SOURCE_* values are below this
SHRINK = 8.0             # pseudo-trials of the regression's guess in each bin
FORGET_AT = 4096         # a bin's counts halve past this many trials: acceptance drifts with the workload


def match_bucket(length: int) -> int:
    """Match lengths -> 1, 2, 3, 4, 6, 8, 12, 16, 24, 32+ (longer matches are rarer and alike)."""
    for bound in (1, 2, 3, 4, 6, 8, 12, 16, 24):
        if length <= bound:
            return bound
    return 32


def features(key: tuple) -> list[float]:
    """The regression's inputs for one key (see the module docstring for the key's fields)."""
    source, match, position, greedy, structural, context, recent = key
    onehot = [0.0] * NUM_SOURCES
    onehot[source] = 1.0
    recent_rate = (recent + 0.5) / 10
    return [1.0, *onehot, math.log2(1 + match), math.log(position), float(position == 1), float(greedy),
            float(structural), float(context == CONSTRAINED), float(context == AFTER_FORCED),
            math.log(recent_rate / (1 - recent_rate))]


NUM_FEATURES = len(features((0, 1, 1, True, False, FREE, 5)))


class RecentAcceptance:
    """Per sequence: an exponential average of the share of its verified draft tokens accepted. A
    new sequence starts at the overall rate of sequences like it, constrained or not (constrained
    extraction accepts most drafts, free text few: one overall rate misled both)."""

    def __init__(self, weight: float = 0.3) -> None:
        self.weight = weight
        self.rates: dict[object, float] = {}
        # constrained? -> [accepted, verified] over all such sequences (Beta(1, 1) start)
        self.overall: dict[bool, list[float]] = {False: [1.0, 2.0], True: [1.0, 2.0]}

    def decile(self, seq_key: object, constrained: bool = False) -> int:
        rate = self.rates.get(seq_key)
        if rate is None:
            rate = self._start(constrained)
        return min(9, int(rate * 10))

    def record(self, seq_key: object, verified: int, accepted: int, constrained: bool = False) -> None:
        if verified <= 0:
            return
        share = accepted / verified
        previous = self.rates.get(seq_key, self._start(constrained))
        self.rates[seq_key] = previous + self.weight * (share - previous)
        overall = self.overall[constrained]
        overall[0] += accepted
        overall[1] += verified

    def _start(self, constrained: bool) -> float:
        accepted, verified = self.overall[constrained]
        return accepted / verified

    def forget(self, seq_key: object) -> None:
        self.rates.pop(seq_key, None)


@dataclass
class Calibration:
    """Predicted survival against outcome, by decile of the prediction."""

    count: list[int] = field(default_factory=lambda: [0] * 10)
    predicted: list[float] = field(default_factory=lambda: [0.0] * 10)
    observed: list[float] = field(default_factory=lambda: [0.0] * 10)

    def add(self, survival: float, accepted: bool) -> None:
        d = min(9, max(0, int(survival * 10)))
        self.count[d] += 1
        self.predicted[d] += survival
        self.observed[d] += accepted

    def expected_error(self) -> float | None:
        """Expected calibration error: the count-weighted mean |predicted - observed| over deciles."""
        total = sum(self.count)
        if not total:
            return None
        return sum(abs(p - o) for p, o in zip(self.predicted, self.observed)) / total

    def table(self) -> list[tuple[int, int, float, float]]:
        """(decile, count, mean predicted, observed rate) for each decile with outcomes."""
        return [(d, n, p / n, o / n) for d, (n, p, o) in enumerate(zip(self.count, self.predicted, self.observed))
                if n]


class SurvivalModel:
    """c(key): binned acceptance rates shrunk towards an online logistic regression."""

    def __init__(self, learning_rate: float = 0.1) -> None:
        self.regressions = {False: _Regression(), True: _Regression()}   # constrained? -> its regression
        self.learning_rate = learning_rate
        self.counts: dict[tuple, list[int]] = {}     # key -> [accepted, trials]
        self._features: dict[tuple, list[float]] = {}
        self._cache: dict[tuple, float] = {}
        self.calibration = Calibration()

    def confidence(self, key: tuple | None) -> float:
        if key is None:  # a forced token
            return 1.0
        c = self._cache.get(key)
        if c is None:
            guess = self.regression(key)
            accepted, trials = self.counts.get(key, (0, 0))
            c = self._cache[key] = (accepted + SHRINK * guess) / (trials + SHRINK)
        return c

    def regression(self, key: tuple) -> float:
        return self.regressions[_constrained(key)].predict(self._features_of(key))

    def record(self, keys: list, survival: list[float], verified: int, matched: int) -> None:
        """`verified` draft positions (keys[j - 1]: None if forced) were checked, the first `matched`
        confirmed; survival[j - 1] was the plan's a_j."""
        for j in range(1, verified + 1):
            if j <= len(survival):
                self.calibration.add(survival[j - 1], j <= matched)
            if j > matched + 1:
                continue   # positions after the first miss were no trials of their own confidence
            key = keys[j - 1]
            if key is None:
                continue
            accepted = j <= matched
            counts = self.counts.setdefault(key, [0, 0])
            counts[0] += accepted
            counts[1] += 1
            if counts[1] >= FORGET_AT:
                counts[0] //= 2
                counts[1] //= 2
            self.regressions[_constrained(key)].add(self._features_of(key), float(accepted))

    def refit(self) -> None:
        """One AdaGrad step of each regression on the outcomes recorded since the last refit."""
        if any([regression.fit(self.learning_rate) for regression in self.regressions.values()]):
            self._cache.clear()

    def _features_of(self, key: tuple) -> list[float]:
        x = self._features.get(key)
        if x is None:
            x = self._features[key] = features(key)
        return x


def _constrained(key: tuple) -> bool:
    return key[5] != FREE


class _Regression:
    """An online logistic regression over `features`, fitted by AdaGrad steps on batches."""

    def __init__(self) -> None:
        self.weights = np.zeros(NUM_FEATURES)
        self.weights[0] = -0.5   # before any outcome: c ~ 0.4 for every key
        # AdaGrad's accumulated squared gradients start at 1, as if the weights had already seen a
        # gradient of 1: the first outcomes move each weight by at most ~learning_rate, instead of
        # a full learning_rate-sized sign step (which sent c from 0.4 to 0.05 after two rejections).
        self.gradient_sq = np.ones(NUM_FEATURES)
        self._pending_x: list[list[float]] = []
        self._pending_y: list[float] = []

    def predict(self, x: list[float]) -> float:
        z = float(np.dot(self.weights, x))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def add(self, x: list[float], accepted: float) -> None:
        self._pending_x.append(x)
        self._pending_y.append(accepted)

    def fit(self, learning_rate: float) -> bool:
        """One step on the outcomes added since the last; False when there were none."""
        if not self._pending_y:
            return False
        x, y = np.asarray(self._pending_x), np.asarray(self._pending_y)
        self._pending_x, self._pending_y = [], []
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ self.weights, -30, 30)))
        gradient = x.T @ (y - p) / len(y)
        self.gradient_sq += gradient * gradient
        self.weights += learning_rate * gradient / np.sqrt(self.gradient_sq)
        return True
