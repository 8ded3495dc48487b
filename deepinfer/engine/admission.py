"""What the engine checks before it admits a request: everything a step would index with.

A token id outside the vocabulary, a NaN bias or a seed that does not fit the noise
generator's 64-bit integers would make the batched step raise, and a failed step fails
every request in the batch. So each is refused here, as a `RequestError` naming the
field, before the request shares a batch with anyone (library callers and the server alike).
"""

from __future__ import annotations

import math
from numbers import Real

from deepinfer.errors import UserError
from deepinfer.sampling import derive_seed
from deepinfer.types import SamplingParams


class RequestError(UserError):
    """A request the engine cannot run: `field` names the offending input, `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def check_request(prompt_token_ids: list[int], params: SamplingParams, vocab_size: int,
                  max_model_len: int) -> None:
    """Raise RequestError if the prompt or the parameters could not run in a batched step."""
    if not prompt_token_ids:
        raise RequestError("prompt_token_ids", "the prompt is empty: give at least one token")
    if len(prompt_token_ids) >= max_model_len:
        raise RequestError("prompt_token_ids", f"the prompt has {len(prompt_token_ids)} tokens; the "
                                               f"model's context is {max_model_len}")
    _check_ids("prompt_token_ids", prompt_token_ids, vocab_size)
    _check_ids("stop_token_ids", params.stop_token_ids or [], vocab_size)
    _check_bias(params.logit_bias, vocab_size)
    _check_seed(params)


def _bad_id(token, vocab_size: int) -> bool:
    return isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab_size


def _check_ids(field: str, ids: list[int], vocab_size: int) -> None:
    bad = next((t for t in ids if _bad_id(t, vocab_size)), None)
    if bad is not None:
        raise RequestError(field, f"token id {bad!r} is not in the vocabulary "
                                  f"(ids 0 to {vocab_size - 1})")


def _check_bias(bias: dict[int, float] | None, vocab_size: int) -> None:
    if not bias:
        return
    _check_ids("logit_bias", list(bias), vocab_size)
    for token, value in bias.items():
        if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
            raise RequestError("logit_bias", f"the bias of token {token} must be a number, "
                                             f"not {value!r}")


def _check_seed(params: SamplingParams) -> None:
    """Each sequence's seed must fit the noise generator's int64 arithmetic."""
    if params.seed is None:
        return
    if isinstance(params.seed, bool) or not isinstance(params.seed, int):
        raise RequestError("seed", f"must be an integer, not {params.seed!r}")
    try:
        seeds = [derive_seed(params.seed, i) for i in range(params.n)]
    except (OverflowError, RuntimeError, ValueError):
        seeds = None
    if seeds is None or not all(-(1 << 63) <= s < (1 << 63) for s in seeds):
        raise RequestError("seed", f"{params.seed} is out of range: it must fit a signed "
                                   "64-bit integer (with n > 1, so must each completion's derived seed)")
