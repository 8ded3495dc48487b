"""Sampling: penalties, temperature, top-k/p, min-p and seeded Gumbel-max draws.

Turns logits rows into tokens deterministically from (seed, position); knows
nothing about models, caches or how masks were computed.
"""

from deepinfer.sampling.noise import derive_seed, gumbel
from deepinfer.sampling.sampler import SampleResult, SamplingRow, apply_penalties, sample
from deepinfer.sampling.stop import find_stop, holdback

__all__ = ["SampleResult", "SamplingRow", "apply_penalties", "derive_seed", "find_stop", "gumbel",
           "holdback", "sample"]
