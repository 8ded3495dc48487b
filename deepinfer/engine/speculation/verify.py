"""The sampled rows of a step, with or without draft tokens to verify ("sampled-verify").

A sequence that samples this step gets 1 + len(seq.draft) logits rows: row j samples the token at
position `seq.num_tokens + j` as if draft[:j] had already been appended, with
- the constraint mask of the matcher advanced through draft[:j] (then rolled back; skipped where
  it cannot change a greedy row's argmax),
- penalties and min_tokens bans computed from output + draft[:j],
- the seeded noise of (seed, position), exactly what the non-speculative path would draw there.
The engine then appends the samples while the draft predicted them, up to and including the first
that differs (the bonus token). Every appended token is thus the
token the non-speculative path would sample at its position, given the same logits.
Knows nothing about the model, the KV cache or how drafts are made.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from deepinfer.constraints import allocate_token_bitmask, apply_token_bitmask_inplace
from deepinfer.engine import guided
from deepinfer.engine.sequence import Sequence
from deepinfer.sampling import SamplingRow, apply_penalties, sample


@dataclass
class Row:
    seq: Sequence
    j: int          # draft tokens assumed appended before this row's position


def rows_of(seqs: list[Sequence]) -> list[Row]:
    """Logits rows in order: each sampling sequence's rows are consecutive."""
    return [Row(seq, j) for seq in seqs for j in range(len(seq.draft) + 1)]


def sample_rows(rows: list[Row], logits: torch.Tensor, eos_ids: frozenset[int]):
    """Penalties, constraint masks and sampling per row -> (token ids, logprobs). logits: [N, V]."""
    sampling = []
    for row in rows:
        seq = row.seq
        output = seq.output_token_ids + seq.draft[:row.j] if row.j else seq.output_token_ids
        sampling.append(SamplingRow(seq.params, seq.seed, seq.num_tokens + row.j, seq.request.prompt_token_ids,
                                    output, _banned(seq, len(output), eos_ids)))
    logits = logits[:len(rows)]
    # Penalties map a masked -inf to -inf and never look at other tokens, so applying them before
    # the mask gives the same logits as after it.
    apply_penalties(logits, sampling)
    top = logits.argmax(dim=1).tolist()  # [N], one batched argmax (the first maximum, as row by row)
    masked = _apply_masks(rows, logits, top)
    if all(s.params.greedy and s.params.logprobs is None for s in sampling):
        # The sampler would take the argmax again: only masked rows changed since `top`.
        if masked:
            for i, token in zip(masked, logits[masked].argmax(dim=1).tolist()):
                top[i] = token
        return top, [None] * len(rows)
    result = sample(logits, sampling)
    return result.token_ids, result.logprobs


def _apply_masks(rows: list[Row], logits: torch.Tensor, top: list[int]) -> list[int]:
    """Each row's constraint mask, in place; returns the masked rows. A greedy row without logprobs
    whose argmax (`top`) the matcher accepts needs no mask: masking only removes tokens, so that
    argmax stays the argmax."""
    bitmask, masked = None, []
    for i, row in enumerate(rows):
        matcher = row.seq.matcher
        if matcher is None:
            continue
        if row.j:  # the draft was checked legal when it was planned; the matcher has not moved since
            guided.advance_known(matcher, [row.seq.draft[row.j - 1]], "a planned draft token")
        params = row.seq.params
        if not (params.greedy and params.logprobs is None and guided.allows(matcher, top[i])):
            if bitmask is None:
                bitmask = allocate_token_bitmask(len(rows), logits.shape[1])
            guided.write_mask(matcher, bitmask, i)
            masked.append(i)
        if row.j == len(row.seq.draft):
            guided.undo(matcher, row.j)
    if masked:
        apply_token_bitmask_inplace(logits, bitmask, indices=masked)
    return masked


def _banned(seq: Sequence, num_output: int, eos_ids: frozenset[int]) -> list[int] | None:
    """Ids the sampler may not pick yet: eos and stop ids before min_tokens (unconstrained only)."""
    if num_output >= seq.params.min_tokens or seq.matcher is not None:
        return None
    return sorted(eos_ids | set(seq.params.stop_token_ids))
