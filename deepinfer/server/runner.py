"""Run a `Job` on the AsyncEngine: n choices fanned out, deltas merged, aborts on exit.

Each choice is its own engine request (`<request_id>-<i>`, seed + i), so the
engine's prefix cache shares the prompt and one choice failing never touches
another request. Closing the delta stream (client gone, error) aborts every
choice still running, which frees its KV blocks at once.

Reasoning-aware jobs run each choice in two engine requests: free text until
the reasoning end tag (`</think>`), then the constrained answer with the
reasoning appended to the prompt (a prefix-cache hit, so cheap). If the model
stops without closing its reasoning, the tag is appended for it, so a
constrained answer always follows; only running out of tokens ends without one.

Every choice that finishes (stop or length) reports its latencies (`ChoiceTiming`)
to `on_choice`: the /metrics histograms.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from deepinfer.server.metrics import ChoiceTiming
from deepinfer.server.params import choice_params
from deepinfer.types import ChoiceDelta, ChoiceResult, DecodedLogprob, Job

_DONE = object()


@dataclass
class _Phase:
    """What one engine request produced, for chaining the answer after the reasoning."""

    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: Any = None


@dataclass
class _Clock:
    """One choice's timestamps (perf_counter seconds), across its engine requests."""

    start: float = field(default_factory=time.perf_counter)
    first_token: float | None = None
    tokens: int = 0
    queue: float | None = None  # the engine's arrival-to-scheduling time of its first request
    finish: str | None = None

    def saw(self, out: Any, token_ids: list[int]) -> None:
        if token_ids and self.first_token is None:
            self.first_token = time.perf_counter()
        self.tokens += len(token_ids)
        if self.queue is None:
            self.queue = getattr(out, "queue_time", None)

    def timing(self) -> ChoiceTiming:
        end = time.perf_counter()
        first = self.first_token
        tpot = (end - first) / (self.tokens - 1) if first is not None and self.tokens > 1 else None
        return ChoiceTiming(e2e=end - self.start, ttft=None if first is None else first - self.start,
                            tpot=tpot, queue=self.queue)


class Runner:
    def __init__(self, engine: Any, tokenizer: Any, vocab: Any = None,
                 on_choice: Callable[[ChoiceTiming], None] | None = None) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.vocab = vocab  # constraints Vocabulary: exact token bytes for logprobs, when known
        self.on_choice = on_choice

    def _token_bytes(self, token_id: int) -> list[int] | None:
        table = getattr(self.vocab, "token_bytes", None)
        if table is None or not 0 <= token_id < len(table) or table[token_id] is None:
            return None
        return list(table[token_id])

    def check(self, job: Job) -> None:
        """Build every choice's engine parameters at admission and let the engine check them
        with the prompt (token ids, bias, seed: its `check_request`, when it has one), so that
        a value the engine refuses is a 400 before the response starts, not a failed stream."""
        check = getattr(self.engine, "check_request", None)
        for index in range(job.n):
            params = choice_params(job, index)
            if check is not None:
                check(job.prompt_token_ids, params)

    def _token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def _logprobs(self, completion: Any) -> list[DecodedLogprob]:
        """Engine TokenLogprob entries -> ours, with token texts (one per generated token)."""
        result = []
        for entry in getattr(completion, "logprobs", None) or []:
            top = sorted(entry.top.items(), key=lambda kv: -kv[1])
            result.append(DecodedLogprob(self._token_text(entry.token_id), entry.token_id, float(entry.logprob),
                                       [(self._token_text(t), t, float(lp)) for t, lp in top],
                                       self._token_bytes(entry.token_id),
                                       [self._token_bytes(t) for t, _ in top]))
        return result

    async def _run_phase(self, prompt_ids: list[int], params: Any, request_id: str, index: int,
                         queue: asyncio.Queue, kind: str, final: bool, clock: _Clock) -> _Phase:
        """Stream one engine request into `queue`; finish reasons pass through only if `final`."""
        phase = _Phase()
        async for out in self.engine.add_request(prompt_token_ids=prompt_ids, params=params,
                                                 request_id=request_id):
            for completion in out.outputs:
                finish = completion.finish_reason
                finish = None if finish is None else str(getattr(finish, "value", finish))
                phase.token_ids += list(completion.token_ids or [])
                clock.saw(out, list(completion.token_ids or []))
                if finish is not None:
                    phase.finish_reason, phase.stop_reason = finish, completion.stop_reason
                passes = final or finish in ("length", "abort", "error")
                if passes and finish is not None:
                    clock.finish = finish
                await queue.put(ChoiceDelta(
                    index=index, text=completion.text or "", token_ids=list(completion.token_ids or []),
                    logprobs=self._logprobs(completion), finish_reason=finish if passes else None,
                    error=completion.error if finish == "error" else None,
                    stop_sequence=completion.stop_reason if isinstance(completion.stop_reason, str) and final
                    else None,
                    cached_tokens=getattr(out, "num_cached_tokens", 0) or 0, kind=kind))
        return phase

    async def _pump(self, job: Job, index: int, request_id: str, queue: asyncio.Queue) -> None:
        clock = _Clock()
        try:
            if job.reasoning_aware and job.constraint is not None:
                await self._reason_then_answer(job, index, request_id, queue, clock)
            else:
                params = choice_params(job, index)
                await self._run_phase(job.prompt_token_ids, params, request_id, index, queue, "content", True,
                                      clock)
            if self.on_choice is not None and clock.finish in ("stop", "length"):
                self.on_choice(clock.timing())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one choice failing must not take the others down
            await queue.put(ChoiceDelta(index=index, finish_reason="error", error=str(exc)))
        finally:
            await queue.put(_DONE)

    async def _reason_then_answer(self, job: Job, index: int, request_id: str, queue: asyncio.Queue,
                                  clock: _Clock) -> None:
        tag_id = self.tokenizer.token_to_id(job.reasoning_end)
        think = choice_params(job, index, phase="reasoning",
                              stop_token_ids=[tag_id] if tag_id is not None else None)
        first = await self._run_phase(job.prompt_token_ids, think, f"{request_id}-think", index, queue,
                                      "reasoning", False, clock)
        if first.finish_reason != "stop":
            return  # length / abort / error already went out as this choice's finish
        ids = list(first.token_ids)
        closed = first.stop_reason == job.reasoning_end or (tag_id is not None and first.stop_reason == tag_id)
        if not closed:  # the model ended (EOS) without closing its reasoning: close it for the answer
            while ids and ids[-1] in self.tokenizer.eos_token_ids:
                ids.pop()
            ids += self.tokenizer.encode(job.reasoning_end, add_special_tokens=False)
        remaining = job.params.max_tokens - len(first.token_ids)
        if remaining < 1:
            clock.finish = "length"
            await queue.put(ChoiceDelta(index=index, finish_reason="length"))
            return
        answer = choice_params(job, index, max_tokens=remaining)
        await self._run_phase(job.prompt_token_ids + ids, answer, request_id, index, queue, "content", True,
                              clock)

    async def stream(self, job: Job, request_id: str) -> AsyncIterator[ChoiceDelta]:
        """Deltas of all choices, interleaved as they arrive; every choice ends with a finish."""
        queue: asyncio.Queue = asyncio.Queue()
        ids = [f"{request_id}-{i}" for i in range(job.n)]
        tasks = [asyncio.create_task(self._pump(job, i, rid, queue)) for i, rid in enumerate(ids)]
        finished: set[int] = set()
        running = len(tasks)
        try:
            while running:
                item = await queue.get()
                if item is _DONE:
                    running -= 1
                    continue
                if item.finish_reason is not None:
                    finished.add(item.index)
                yield item
            for i in range(job.n):  # an engine stream that ended without a finish reason
                if i not in finished:
                    yield ChoiceDelta(index=i, finish_reason="error", error="the engine ended the request early")
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()  # leaving the engine's async iterator aborts the request

    async def collect(self, job: Job, request_id: str) -> list[ChoiceResult]:
        results = [ChoiceResult(index=i) for i in range(job.n)]
        async for delta in self.stream(job, request_id):
            results[delta.index].add(delta)
        return results
