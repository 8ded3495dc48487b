"""One completion being generated: its tokens, KV blocks, matcher and text.

A request with n > 1 runs as n sequences that share the prompt (and, through
the prefix cache, the prompt's KV blocks). Knows nothing about scheduling
policy or the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepinfer.kvcache import BlockTable
from deepinfer.types import FinishReason, Request, RequestStatus, TokenLogprob


@dataclass(eq=False)  # identity: the scheduler's `in` / `remove` must not compare every field
class Sequence:
    request: Request
    index: int                      # which of the request's n completions
    seed: int
    detokenizer: Any                # IncrementalDetokenizer
    matcher: Any = None             # constraints.Matcher, driven through guided.py; None when unconstrained or finished
    status: RequestStatus = RequestStatus.WAITING
    output_token_ids: list[int] = field(default_factory=list)
    table: BlockTable = field(default_factory=BlockTable)
    num_computed: int = 0           # tokens whose KV is in the cache
    num_cached_prompt: int = 0      # prompt tokens served from the prefix cache (first admission)
    restore_point: int = 0          # tokens computed before its last preemption (kvcache/replay.py)
    text: str = ""                  # text so far (stop strings already cut)
    num_emitted_tokens: int = 0     # tokens / text / logprobs already reported to the caller
    num_emitted_chars: int = 0
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    stop_reason: str | int | None = None
    error: str | None = None
    # speculative decoding: draft tokens to verify this step (never part of token_ids) and where
    # they came from (drafts.Draft, for acceptance statistics)
    draft: list[int] = field(default_factory=list)
    draft_info: Any = None

    @property
    def params(self):
        return self.request.params

    @property
    def token_ids(self) -> list[int]:
        """Prompt followed by output: what the KV cache must hold."""
        return self.request.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.request.prompt_token_ids) + len(self.output_token_ids)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def is_prefill(self) -> bool:
        return self.num_tokens - self.num_computed > 1

    def finish(self, reason: FinishReason, stop_reason: str | int | None = None, error: str | None = None) -> None:
        """The output is final. The matcher is dropped: its stack of states is most of a finished
        request's memory, and Request <-> Sequence is a reference cycle that only the cyclic GC
        frees (32-request extraction run: ~23k objects a run; its collections ~20 ms of CPU)."""
        if self.finish_reason is None:
            self.finish_reason, self.stop_reason, self.error = reason, stop_reason, error
            self.status = RequestStatus.FINISHED
            self.matcher = None
