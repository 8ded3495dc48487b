"""Run a `Job` on the AsyncEngine: n choices fanned out, deltas merged, aborts on exit.

Each choice is its own engine request (`<request_id>-<i>`, seed + i), so the
engine's prefix cache shares the prompt and one choice failing never touches
another request. Closing the delta stream (client gone, error) aborts every
choice still running, which frees its KV blocks at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from deepinfer.server.job import ChoiceResult, Delta, Job, TokenLogprob
from deepinfer.server.params import sampling_params

_DONE = object()


class Runner:
    def __init__(self, engine: Any, tokenizer: Any, params_cls=None) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.params_cls = params_cls

    def _token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def _logprobs(self, completion: Any) -> list[TokenLogprob]:
        """Engine TokenLogprob entries -> ours, with token texts (one per generated token)."""
        result = []
        for entry in getattr(completion, "logprobs", None) or []:
            top = sorted(entry.top.items(), key=lambda kv: -kv[1])
            result.append(TokenLogprob(self._token_text(entry.token_id), entry.token_id, float(entry.logprob),
                                       [(self._token_text(t), t, float(lp)) for t, lp in top]))
        return result

    def _deltas(self, out: Any, index: int) -> list[Delta]:
        """One engine RequestOutput (n=1: one completion) -> our deltas for choice `index`."""
        deltas = []
        for completion in out.outputs:
            finish = completion.finish_reason
            finish = None if finish is None else str(getattr(finish, "value", finish))
            stop = completion.stop_reason if isinstance(completion.stop_reason, str) else None
            deltas.append(Delta(index=index, text=completion.text or "",
                                token_ids=list(completion.token_ids or []),
                                logprobs=self._logprobs(completion), finish_reason=finish,
                                error=completion.error if finish == "error" else None,
                                stop_sequence=stop, cached_tokens=getattr(out, "num_cached_tokens", 0) or 0))
        return deltas

    async def _pump(self, job: Job, index: int, request_id: str, queue: asyncio.Queue) -> None:
        try:
            params = sampling_params(job, index, self.params_cls)
            async for out in self.engine.add_request(prompt_token_ids=job.prompt_token_ids,
                                                     params=params, request_id=request_id):
                for delta in self._deltas(out, index):
                    await queue.put(delta)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one choice failing must not take the others down
            await queue.put(Delta(index=index, finish_reason="error", error=str(exc)))
        finally:
            await queue.put(_DONE)

    async def stream(self, job: Job, request_id: str) -> AsyncIterator[Delta]:
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
                    yield Delta(index=i, finish_reason="error", error="the engine ended the request early")
        finally:
            for task, rid in zip(tasks, ids):
                if not task.done():
                    task.cancel()
                    _abort(self.engine, rid)

    async def collect(self, job: Job, request_id: str) -> list[ChoiceResult]:
        results = [ChoiceResult(index=i) for i in range(job.n)]
        async for delta in self.stream(job, request_id):
            results[delta.index].add(delta)
        return results


def _abort(engine: Any, request_id: str) -> None:
    try:
        result = engine.abort(request_id)
        if asyncio.iscoroutine(result):
            asyncio.ensure_future(result)
    except Exception:  # aborting a request the engine already finished is fine
        pass
