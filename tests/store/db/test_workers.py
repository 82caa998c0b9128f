"""``store.db._workers.Workers``: what ``Database.run`` relied on ``anyio.to_thread`` for, kept.

The bound (never more than ``size`` calls at once), the caller's context in the call, the caller
waiting out its call when cancelled, exceptions with their tracebacks, threads that stop when idle
or closed, and that both databases hop through it.
"""

from __future__ import annotations

import contextvars
import os
import signal
import threading
import time

import anyio
import pytest

from store import Store
from store.db import _workers
from store.db._workers import Workers

pytestmark = pytest.mark.anyio

_WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def test_a_call_runs_on_another_thread_and_answers() -> None:
    workers = Workers(2, "test")
    try:
        assert await workers.run(threading.get_ident) != threading.get_ident()
        assert workers.threads == 1
        # A second call, one after the other, reuses the idle thread.
        await workers.run(threading.get_ident)
        assert workers.threads == 1
    finally:
        workers.close()


async def test_never_more_than_size_calls_at_once() -> None:
    workers = Workers(3, "test")
    running, peak, lock = 0, 0, threading.Lock()

    def call() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(12):
                tg.start_soon(workers.run, call)
        assert peak == 3  # all 12 ran, three at a time, on three threads
        assert workers.threads == 3
    finally:
        workers.close()


async def test_the_call_runs_in_a_copy_of_the_callers_context() -> None:
    workers = Workers(1, "test")

    def set_and_read() -> str:
        seen = _WHO.get()
        _WHO.set("the worker")  # stays in the copy
        return seen

    try:
        token = _WHO.set("caller")
        try:
            assert await workers.run(set_and_read) == "caller"
            assert _WHO.get() == "caller"
        finally:
            _WHO.reset(token)
        assert await workers.run(_WHO.get) == "nobody"  # the thread keeps nothing between calls
    finally:
        workers.close()


async def test_an_exception_reaches_the_caller_with_its_traceback() -> None:
    workers = Workers(1, "test")

    def fail() -> None:
        raise KeyError("inside")

    try:
        with pytest.raises(KeyError, match="inside") as caught:
            await workers.run(fail)
        assert caught.traceback[-1].name == "fail"
        assert await workers.run(lambda: 7) == 7  # the thread survived it
    finally:
        workers.close()


async def test_a_cancelled_caller_waits_for_its_call_to_finish() -> None:
    workers = Workers(1, "test")
    started, finished = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        finished.set()

    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(workers.run, slow)
                await anyio.to_thread.run_sync(started.wait)
                scope.cancel()
        # The cancellation took effect only once the call had ended: no write runs on unseen.
        assert finished.is_set()
    finally:
        workers.close()


def _until_stopped(workers: Workers) -> None:
    deadline = time.monotonic() + 5
    while workers.threads:
        assert time.monotonic() < deadline, "the worker threads did not stop"
        time.sleep(0.01)


async def test_idle_threads_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_workers, "IDLE_SECONDS", 0.05)
    workers = Workers(2, "test")
    await workers.run(lambda: None)
    assert workers.threads == 1
    await anyio.to_thread.run_sync(_until_stopped, workers)
    # And a new call starts a new one.
    assert await workers.run(lambda: 3) == 3
    workers.close()


async def test_closing_stops_the_threads_and_later_calls_still_run() -> None:
    workers = Workers(2, "test")
    await workers.run(lambda: None)
    workers.close()
    await anyio.to_thread.run_sync(_until_stopped, workers)
    # After close a call takes anyio's worker threads, as every call did before this pool.
    assert await workers.run(lambda: 5) == 5


async def test_a_forked_child_starts_threads_of_its_own() -> None:
    workers = Workers(1, "test")
    try:
        await workers.run(lambda: None)  # the parent's one thread, idle: the child has no such thread
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: one call through the inherited pool, its answer up the pipe
            try:
                os.close(read_end)
                signal.alarm(10)  # a call that waits for no thread ends the child: the parent reads b""
                answer = anyio.run(workers.run, lambda: b"answered")
                os.write(write_end, answer)
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            answer = await anyio.to_thread.run_sync(pipe.read)
        await anyio.to_thread.run_sync(os.waitpid, pid, 0)
        assert answer == b"answered"  # without the reset, the call waited for a thread that is not there
    finally:
        workers.close()


async def test_the_store_hops_through_its_workers(store: Store) -> None:
    store.tasks.create(title="one", actor="t")
    assert store.db._workers.threads == 0
    tasks, _ = await store.db.run(store.tasks.list)
    assert [task.title for task in tasks] == ["one"]
    assert store.db._workers.threads == 1
