"""Admission-time compiles: a queue by arrival over `workers` slots, each compile in its own thread.

A request waits for a slot only while `workers` other compiles are running, and never
behind a compile that ran out of time: a compile past its deadline is answered at once
(its request gets a 400) and gives its slot back, although its thread runs on until the
compiler returns (stopping a compile midway is the compiler's business). Such abandoned
threads still use CPU and memory, so at most `max_abandoned` of them are let go; past that,
a timed-out compile keeps its slot until its thread ends, which slows admissions down
instead of piling up threads. Requests with the same constraint share one compile. A compile
that raises leaves nothing behind: its frames' locals are dropped and its memory given back to
the OS (deepinfer/memory.py) before the error is delivered.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable
from typing import Any

from deepinfer.memory import forget_frames, give_back


class CompileTimeout(Exception):
    pass


class CompilePool:
    def __init__(self, workers: int = 4, max_abandoned: int | None = None) -> None:
        self.workers = workers
        self.max_abandoned = workers if max_abandoned is None else max_abandoned
        self.abandoned = 0  # timed-out compiles whose thread is still running
        self.running = 0    # compiles holding a slot
        self._slots: asyncio.Semaphore | None = None  # made on the serving loop, at first use
        self._in_flight: dict[Hashable, asyncio.Future] = {}
        self._lock = threading.Lock()

    async def run(self, key: Hashable, work: Callable[[], Any], timeout_s: float) -> Any:
        """work()'s result (or its exception), computed once for concurrent callers of one key;
        CompileTimeout when it takes longer than `timeout_s` (counted from when it starts)."""
        shared = self._in_flight.get(key)
        if shared is None:
            shared = self._in_flight[key] = asyncio.ensure_future(self._compile(key, work, timeout_s))
        return await asyncio.shield(shared)

    async def _compile(self, key: Hashable, work: Callable[[], Any], timeout_s: float) -> Any:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        await self._slots.acquire()  # FIFO: waiters are woken in arrival order
        self.running += 1
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        thread = threading.Thread(target=self._work, args=(work, loop, done), name="constraint-compile",
                                  daemon=True)
        thread.start()
        abandoned = False
        try:
            return await asyncio.wait_for(asyncio.shield(done), timeout_s)
        except asyncio.TimeoutError:
            abandoned = True
            raise CompileTimeout from None
        except asyncio.CancelledError:  # the server is stopping
            abandoned = True
            raise
        finally:
            del self._in_flight[key]
            if abandoned:
                self._abandon(done)
            else:
                self._release()

    def _abandon(self, done: asyncio.Future) -> None:
        """Free the slot now if few threads are abandoned, else when this one ends."""
        with self._lock:
            let_go = self.abandoned < self.max_abandoned
            if let_go:
                self.abandoned += 1
        if let_go:
            self._release()
            done.add_done_callback(lambda _: self._end_abandoned())
        else:
            done.add_done_callback(lambda _: self._release())

    def _end_abandoned(self) -> None:
        with self._lock:
            self.abandoned -= 1

    def _release(self) -> None:
        self.running -= 1
        self._slots.release()

    @staticmethod
    def _work(work: Callable[[], Any], loop: asyncio.AbstractEventLoop, done: asyncio.Future) -> None:
        try:
            result, error = work(), None
        except BaseException as exc:  # delivered to the awaiting request (or to nobody: abandoned)
            # A refused compile's state lives on in its exception's frames: drop it, then give
            # its memory back (deepinfer/memory.py), before anyone can hold on to the error.
            forget_frames(exc)
            give_back()
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(_settle, done, result, error)
        except RuntimeError:  # the loop is closed (server stopped): nobody waits any more
            pass
        finally:
            del work, result, error  # this frame is in the error's traceback: no cycle through it


def _settle(done: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
