"""The worker threads a database's blocking calls run on: one hop to a thread and back, kept short.

:meth:`~store.db.Database.run` used ``anyio.to_thread.run_sync`` behind a ``CapacityLimiter``: ~90 µs
a call on the event loop's side and the thread's (the limiter's borrowing, anyio's idle-worker
bookkeeping and cancel-scope machinery, a ``concurrent.futures`` hand-off), where a scoped
``memory.query`` of 20 entries costs ~0.5 ms in SQLite and Python. :class:`Workers` is the same hop
for an asyncio loop, done directly: the call goes onto a queue that at most ``size`` threads of this
database's own take from, and its result comes back with one ``call_soon_threadsafe`` (~30 µs in
all, ``tests/store/db/test_workers.py``). What the callers relied on is unchanged:

- at most ``size`` calls run at once (the limiter's bound: a PostgreSQL pool's connections);
- the call runs in a copy of the caller's context (``contextvars``: the credential a tool call acts
  through, which its events record);
- the caller waits for the call to finish even when cancelled (as ``to_thread.run_sync`` does
  without ``abandon_on_cancel``): no write is left running unseen behind a cancelled request;
- its exception is raised in the caller, its traceback kept.

Threads start when calls need them and stop after :data:`IDLE_SECONDS` idle, or when the database
closes; a forked child starts its own. On an event loop that is not asyncio's (trio), the call
takes ``anyio.to_thread`` as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

__all__ = ["IDLE_SECONDS", "Workers"]

IDLE_SECONDS: Final = 10.0
"""How long a worker thread waits for a call before it stops (anyio's own workers wait as long)."""

_T = TypeVar("_T")
_STOP: Final = None
"""What :meth:`Workers.close` queues for each thread: stop now."""


class Workers:
    """Up to ``size`` threads running blocking calls for async callers (see the module docstring)."""

    def __init__(self, size: int, name: str):
        if size < 1:
            raise ValueError("a database needs at least one worker thread")
        self.size = size
        self.name = name
        self._closed = False
        self._limiter: anyio.CapacityLimiter | None = None  # for the fallback, made on first use
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting on the queue, or about to: each takes the next call

    @property
    def threads(self) -> int:
        """How many worker threads are running now."""
        return self._threads

    async def run(self, fn: Callable[[], _T]) -> _T:
        """``fn()`` on a worker thread; its result, or its exception."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        future: asyncio.Future[_T] | None = None if loop is None else loop.create_future()
        if future is None or not self._submit((loop, future, contextvars.copy_context(), fn)):
            # Not asyncio (trio), or closed (the call fails as it did: "the database is closed"):
            # anyio's own worker threads, bounded the same way.
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(self.size)
            return await anyio.to_thread.run_sync(fn, limiter=self._limiter)
        # Shielded as to_thread.run_sync shields: a cancelled caller still waits for the call.
        with anyio.CancelScope(shield=True):
            result = await future
        return result

    def _submit(self, call: tuple[Any, ...]) -> bool:
        """Queue ``call`` (starting a thread if none is free and fewer than ``size`` run); False if closed."""
        if os.getpid() != self._pid:
            # A forked child has none of its parent's threads (and perhaps a lock held by one).
            self._reset()
        with self._lock:
            if self._closed:
                return False
            start = self._idle == 0 and self._threads < self.size
            if start:
                self._threads += 1
            else:
                self._idle -= self._idle > 0  # that thread is spoken for
            self._calls.put(call)
        if start:
            threading.Thread(target=self._work, name=f"{self.name}-worker", daemon=True).start()
        return True

    def _work(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if not self._calls.empty():  # a call came as the wait ended: take it
                        continue
                    self._threads -= 1
                    self._idle -= 1
                    return
            if call is _STOP:
                with self._lock:
                    self._threads -= 1
                return
            loop, future, context, fn = call
            try:
                result, error = context.run(fn), None
            except BaseException as exc:  # the caller's to handle, whatever it is
                result, error = None, exc
            # Idle before the answer leaves: the caller's next call then finds this thread free.
            with self._lock:
                self._idle += 1
            _deliver(loop, future, result, error)

    def close(self) -> None:
        """Stop every thread once the calls already queued have run (without waiting for them)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in range(self._threads):
                self._calls.put(_STOP)


def _deliver(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled natively (asyncio's own cancel, past anyio's shield)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
