"""After sampling: append the token, advance the matcher, decode text, decide whether to finish,
and build the caller's deltas.

Stop strings are searched in decoded text (never mid-character). While a
sequence runs, text that could still become a stop string is held back from
deltas. Knows nothing about the model or the KV cache.
"""

from __future__ import annotations

import time

from deepinfer.engine import guided
from deepinfer.engine.sequence import Sequence
from deepinfer.sampling import find_stop, holdback
from deepinfer.types import CompletionOutput, FinishReason, Request, RequestOutput, TokenLogprob


def append_token(seq: Sequence, token: int, logprob: TokenLogprob | None, eos_ids: frozenset[int],
                 max_model_len: int, accepted: bool = False) -> None:
    """Record one sampled (or forced) token and finish the sequence if it should stop.

    accepted: the caller already advanced the matcher with it (jump-forward)."""
    request, params = seq.request, seq.params
    if seq.matcher is not None and not accepted:  # a complete output within max_tokens (guided.py)
        token = guided.fit_budget(seq.matcher, token, params.max_tokens - len(seq.output_token_ids))
    seq.output_token_ids.append(token)
    if logprob is not None:
        seq.logprobs.append(logprob)
    if request.first_token_time is None and not accepted:  # TTFT: the model's first token, not forced text
        request.first_token_time = time.perf_counter()
    if seq.matcher is not None and not accepted and not guided.advance(seq.matcher, token):
        seq.finish(FinishReason.ERROR, error=f"internal error: the constraint rejected sampled token {token}")
        return
    if token in params.stop_token_ids:
        _finish_with_flush(seq, FinishReason.STOP, token)
        return
    if token in eos_ids and (not params.ignore_eos or seq.matcher is not None):
        _finish_with_flush(seq, FinishReason.STOP)
        return
    seq.text += seq.detokenizer.push(token)
    if params.stop and _cut_at_stop_string(seq):
        return
    if seq.matcher is not None and guided.is_finished(seq.matcher):
        _finish_with_flush(seq, FinishReason.STOP)
    elif len(seq.output_token_ids) >= params.max_tokens or seq.num_tokens >= max_model_len:
        _finish_with_flush(seq, FinishReason.LENGTH)


def _finish_with_flush(seq: Sequence, reason: FinishReason, stop_reason=None) -> None:
    seq.text += seq.detokenizer.flush()
    if seq.params.stop and _cut_at_stop_string(seq):
        return
    seq.finish(reason, stop_reason)


def _cut_at_stop_string(seq: Sequence) -> bool:
    longest = max(len(s) for s in seq.params.stop)
    start = max(0, seq.num_emitted_chars - longest)  # a stop may straddle emitted text
    found = find_stop(seq.text, seq.params.stop, start)
    if found is None:
        return False
    index, stop = found
    seq.text = seq.text[:index + (len(stop) if seq.params.include_stop_str_in_output else 0)]
    seq.finish(FinishReason.STOP, stop)
    return True


def take_delta(seq: Sequence) -> CompletionOutput:
    """What the caller has not seen yet: new tokens, text (minus a possible stop prefix), logprobs."""
    upto = len(seq.text) if seq.finished else len(seq.text) - holdback(seq.text, seq.params.stop)
    upto = max(upto, seq.num_emitted_chars)
    out = CompletionOutput(
        index=seq.index, text=seq.text[seq.num_emitted_chars:upto],
        token_ids=seq.output_token_ids[seq.num_emitted_tokens:],
        finish_reason=seq.finish_reason, error=seq.error, stop_reason=seq.stop_reason,
        logprobs=seq.logprobs[seq.num_emitted_tokens:] if seq.params.logprobs is not None else None)
    seq.num_emitted_chars, seq.num_emitted_tokens = upto, len(seq.output_token_ids)
    return out


def request_delta(request: Request, seqs: list[Sequence]) -> RequestOutput:
    now = time.perf_counter()
    finished = request.is_finished
    if finished and request.finish_time is None:
        request.finish_time = now
    first, scheduled = request.first_token_time, request.first_scheduled_time
    return RequestOutput(
        request_id=request.request_id, prompt_token_ids=request.prompt_token_ids,
        outputs=[take_delta(s) for s in seqs], finished=finished, prompt=request.prompt,
        num_cached_tokens=max((s.num_cached_prompt for s in request.sequences), default=0),
        ttft=None if first is None else first - request.arrival_time,
        queue_time=None if scheduled is None else scheduled - request.arrival_time,
        total_time=None if request.finish_time is None else request.finish_time - request.arrival_time)


def merge(into: RequestOutput | None, delta: RequestOutput) -> RequestOutput:
    """Accumulate streamed deltas into one full RequestOutput."""
    if into is None:
        into = RequestOutput(delta.request_id, delta.prompt_token_ids, [], prompt=delta.prompt)
    by_index = {o.index: o for o in into.outputs}
    for part in delta.outputs:
        full = by_index.get(part.index)
        if full is None:
            full = by_index[part.index] = CompletionOutput(index=part.index,
                                                           logprobs=[] if part.logprobs is not None else None)
            into.outputs.append(full)
        full.text += part.text
        full.token_ids += part.token_ids
        if part.logprobs is not None:
            full.logprobs = (full.logprobs or []) + part.logprobs
        full.finish_reason, full.error, full.stop_reason = part.finish_reason, part.error, part.stop_reason
    into.outputs.sort(key=lambda o: o.index)
    into.finished, into.num_cached_tokens = delta.finished, delta.num_cached_tokens
    into.ttft, into.total_time = delta.ttft or into.ttft, delta.total_time
    into.queue_time = delta.queue_time or into.queue_time
    return into
