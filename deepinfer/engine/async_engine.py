"""`AsyncEngine`: the engine on a background thread, with per-request asyncio streams.

    engine = AsyncEngine("path/or/None", dtype="float32")
    async for delta in engine.add_request("prompt", SamplingParams(...), request_id="r1"):
        print(delta.outputs[0].text, end="")          # RequestOutput deltas: new text / token ids
    engine.abort("r1")                                 # from any thread or task; frees KV at once
    engine.stats()                                     # queue length, KV usage, prefix hit rate, ...

One thread owns the `Engine` and runs steps while work exists; callers talk to
it only through a command queue, and receive deltas on their own event loop via
`call_soon_threadsafe`. Leaving the `async for` early (break, cancellation)
aborts the request.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from typing import Any, AsyncIterator

from deepinfer.engine.engine import Engine
from deepinfer.engine.llm import load_engine
from deepinfer.types import RequestOutput, SamplingParams

_END = object()


class AsyncEngine:
    def __init__(self, model: str | None = None, *, dtype: Any = "float32", engine: Engine | None = None,
                 **options: Any) -> None:
        if engine is None:
            engine = load_engine(model, dtype, **options)
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.model_config = engine.model_config
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._wake = threading.Event()
        self._streams: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = {}
        self._stats: dict = engine.stats()
        self._ids = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="deepinfer-engine", daemon=True)
        self._thread.start()

    @property
    def compiler(self):
        return self.engine.compiler

    async def add_request(self, prompt: str | None = None, params: SamplingParams | None = None,
                          request_id: str | None = None, *,
                          prompt_token_ids: list[int] | None = None) -> AsyncIterator[RequestOutput]:
        """Submit a prompt (text or token ids); yields RequestOutput deltas until finished.
        Errors in the request itself (e.g. a prompt longer than the context) are raised here."""
        if prompt_token_ids is None:
            prompt_token_ids = self.tokenizer.encode(prompt)
        request_id = request_id if request_id is not None else f"async-{next(self._ids)}"
        inbox: asyncio.Queue = asyncio.Queue()
        self._streams[request_id] = (asyncio.get_running_loop(), inbox)
        self._send(("add", request_id, list(prompt_token_ids), params or SamplingParams(), prompt))
        finished = False
        try:
            while True:
                item = await inbox.get()
                if item is _END:
                    finished = True
                    return
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                yield item
                if item.finished:
                    finished = True
                    return
        finally:
            self._streams.pop(request_id, None)
            if not finished:
                self.abort(request_id)

    def check_request(self, prompt_token_ids: list[int], params: SamplingParams) -> None:
        """What `add_request` would refuse (admission.RequestError), checked on the caller's thread:
        the check reads only the vocabulary and context sizes."""
        self.engine.check_request(prompt_token_ids, params)

    def abort(self, request_id: str) -> None:
        self._send(("abort", request_id))

    def stats(self) -> dict:
        """Engine counters as of the last step, plus requests not yet picked up."""
        return {**self._stats, "num_pending_commands": self._commands.qsize()}

    def shutdown(self) -> None:
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=5)
        self.engine.constraints.shutdown()

    # -- the engine thread --------------------------------------------------------------------------
    def _send(self, command) -> None:
        self._commands.put(command)
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            self._drain_commands()
            if not self.engine.has_unfinished():
                self._wake.wait()
                self._wake.clear()
                continue
            try:
                outputs = self.engine.step()
            except Exception as exc:  # a fault no request caused (a step's compute isolates its
                # culprit, engine/isolation.py): fail every open stream rather than hang them
                for request_id in list(self.engine.requests):
                    self._deliver(request_id, RuntimeError(f"engine step failed: {exc!r}"))
                    self.engine.abort(request_id)
                self.engine.requests.clear()
                continue
            self._stats = self.engine.stats()
            for out in outputs:
                self._deliver(out.request_id, out)
            if not outputs and not self.engine.scheduler.has_work():
                self._wake.wait(0.002)  # only constraints compiling: poll gently
                self._wake.clear()

    def _drain_commands(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            if command[0] == "add":
                _, request_id, ids, params, prompt = command
                if request_id not in self._streams:  # cancelled before it started
                    continue
                try:
                    self.engine.add_request(ids, params, request_id=request_id, prompt=prompt)
                except Exception as exc:
                    self._deliver(request_id, exc)
            else:
                self.engine.abort(command[1])
                for out in self.engine._postprocess():
                    self._deliver(out.request_id, out)
                self._stats = self.engine.stats()  # no step may follow (idle): stats() must not go stale

    def _deliver(self, request_id: str, item) -> None:
        target = self._streams.get(request_id)
        if target is None:
            return
        loop, inbox = target
        try:
            loop.call_soon_threadsafe(inbox.put_nowait, item)
        except RuntimeError:  # the caller's loop is closed
            self._streams.pop(request_id, None)
