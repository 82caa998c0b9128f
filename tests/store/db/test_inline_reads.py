"""``Database.run_inline``: a brief read on the caller's thread that never waits for a lock.

Authentication reads a credential's row on every request through it, so these tests pin what makes
that safe: the read sees every commit (of any connection, any process) at once, a busy database
moves the call to a worker thread rather than stalling the event loop, and nothing inline can write.
"""

from __future__ import annotations

import sys
import threading

import anyio
import pytest

from store import ProjectPaths, Store
from store.db._connection import Database
from store.errors import InternalError, StoreBusy
from tests.fakes.sqlite_busy import busy_inline_reads

pytestmark = pytest.mark.anyio


def _count_tasks(db: Database) -> tuple[int, int]:
    """How many tasks there are, and the thread that counted them."""
    count = db.read(lambda conn: conn.execute("SELECT count(*) FROM tasks").fetchone()[0])
    return int(count), threading.get_ident()


async def test_runs_on_the_calling_thread(store: Store) -> None:
    store.tasks.create(title="one", actor="t")
    count, thread = await store.db.run_inline(_count_tasks, store.db)
    assert (count, thread) == (1, threading.get_ident())
    # The worker-thread path gives the same answer, elsewhere.
    count, thread = await store.db.run(_count_tasks, store.db)
    assert count == 1 and thread != threading.get_ident()


async def test_sees_a_commit_made_by_another_process_at_once(store: Store, project: ProjectPaths) -> None:
    assert (await store.db.run_inline(_count_tasks, store.db))[0] == 0  # the inline connection is open
    script = (
        "import sys; from store import open_store, ProjectPaths; from pathlib import Path;"
        "s = open_store(ProjectPaths(Path(sys.argv[1]))); s.tasks.create(title='x', actor='p'); s.close()"
    )
    with anyio.fail_after(60):
        await anyio.run_process([sys.executable, "-c", script, str(project.root)])
    assert (await store.db.run_inline(_count_tasks, store.db))[0] == 1


async def test_a_busy_database_moves_the_call_to_a_worker_thread(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.tasks.create(title="one", actor="t")
    busy = busy_inline_reads(store.db, monkeypatch)
    count, thread = await store.db.run_inline(_count_tasks, store.db)
    # Refused inline (at once: the fault answers busy, and the connection has no busy timeout to
    # wait out), then answered by a worker, the same answer run() gives.
    assert busy[0].refused == 1
    assert (count, thread != threading.get_ident()) == (1, True)
    # A call that lets sqlite3's busy error out itself moves too.
    raw = await store.db.run_inline(lambda: store.db.connection().execute("SELECT 7").fetchone()[0])
    assert raw == 7 and busy[0].refused == 2


async def test_the_inline_connection_waits_for_no_lock(store: Store) -> None:
    await store.db.run_inline(_count_tasks, store.db)
    inline = store.db._inline.conn
    assert inline.execute("PRAGMA busy_timeout").fetchone()[0] == 0
    assert inline.execute("PRAGMA query_only").fetchone()[0] == 1
    # The thread's ordinary connection keeps its wait.
    assert store.db.connection().execute("PRAGMA busy_timeout").fetchone()[0] == store.db.busy_timeout_ms


async def test_nothing_inline_can_write(store: Store) -> None:
    def write_through_write() -> None:
        store.db.write(lambda conn: conn.execute("UPDATE tasks SET title = 'changed'"))

    with pytest.raises(InternalError, match="never runs inline"):
        await store.db.run_inline(write_through_write)

    def write_directly() -> None:
        store.db.connection().execute("UPDATE tasks SET title = 'changed'")

    store.tasks.create(title="kept", actor="t")
    # Refused by query_only, and not retried on a worker thread, where the write would succeed.
    with pytest.raises(InternalError):
        await store.db.run_inline(write_directly)
    assert [task.title for task in store.tasks.list()[0]] == ["kept"]


async def test_only_busy_moves_to_a_worker(store: Store) -> None:
    calls: list[int] = []

    def failing(error: Exception) -> None:
        calls.append(threading.get_ident())
        raise error

    with pytest.raises(ValueError, match="a bug"):
        await store.db.run_inline(failing, ValueError("a bug"))
    assert calls == [threading.get_ident()]  # raised where it ran, never run again
    calls.clear()
    with pytest.raises(StoreBusy):
        await store.db.run_inline(failing, StoreBusy("busy"))
    assert len(calls) == 2 and calls[0] == threading.get_ident() != calls[1]
