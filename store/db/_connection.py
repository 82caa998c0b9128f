"""The SQLite connection discipline: the only place that opens the database.

- WAL journal, ``synchronous=FULL``, ``foreign_keys=ON`` and a busy timeout on every connection;
- one connection per thread (reads never share a connection across threads);
- every write is ``BEGIN IMMEDIATE`` ... ``COMMIT`` (a writer takes the lock up front, so two
  writers never deadlock upgrading a read lock), serialised inside the process by a lock and
  across processes by SQLite, with bounded retries when another process holds the lock longer
  than the busy timeout;
- ``sqlite3`` errors never leave :meth:`Database.write`, :meth:`Database.read` or
  :meth:`Database.run`: they are translated here, chained (``raise ... from``), by
  :func:`translate_sqlite_error` -- busy past every retry is :class:`~store.errors.StoreBusy`, a
  constraint violation :class:`~store.errors.Conflict`, anything else
  :class:`~store.errors.InternalError`;
- :meth:`Database.run` moves any blocking call onto a worker thread of the database's own, at most
  eight at once (:class:`~store.db._workers.Workers`, one hop there and back), so async code never
  blocks its event loop on SQLite;
- :meth:`Database.run_inline` is the one exception, for a read of a row or two made on every
  request (authentication): it runs on the caller's thread, on a connection that never waits for a
  lock and cannot write, and moves to a worker thread as :meth:`Database.run` does the moment
  SQLite answers busy.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import ParamSpec, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from store.db._migrations import apply_migrations
from store.db._workers import Workers
from store.errors import Conflict, InternalError, RoundtableError, StoreBusy

__all__ = ["Database", "is_busy_error", "translate_sqlite_error"]

_T = TypeVar("_T")
_P = ParamSpec("_P")

BUSY_TIMEOUT_MS = 15_000
WRITE_ATTEMPTS = 5
"""How many times :meth:`Database.write` tries a transaction that finds the database locked."""
_MMAP_SIZE = 1 << 30
"""Bytes of the database file a connection reads through a memory map instead of ``read`` calls:
a ranked query's random reads of index pages (``memory_rank_docs``, blocks) not in SQLite's small
page cache then cost no system call and no copy each (``bench_memory``'s ranked rows)."""
_CACHE_KIB = 32 * 1024
"""SQLite's page cache per connection, in KiB (its default is 2 MiB), filled only as pages are
read: past the memory map, a large project's index pages (the B-trees' inner pages, a common
term's first blocks) then stay in it from one ranked query to the next (at 1,000,000 entries,
between bare scans: the identifier query 5.9 -> 4.9 ms, three common words 25.5 -> 22.2 ms)."""


def is_busy_error(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds the lock."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text or "database table is locked" in text


def translate_sqlite_error(exc: sqlite3.Error) -> RoundtableError:
    """Our error for a ``sqlite3`` error that reached the database boundary (the caller chains it)."""
    if is_busy_error(exc):
        return StoreBusy("the database stayed locked by another process; nothing was changed, try again")
    # The caller may be an untrusted role container: the message names no table, column or SQL
    # (the sqlite3 error stays chained as ``__cause__``, and the boundaries log it).
    if isinstance(exc, sqlite3.IntegrityError):
        text = str(exc)
        if "constraint failed" in text:  # SQLite's own wording names the table and column
            return Conflict("the change conflicts with stored data; nothing was changed")
        return Conflict(f"{text}; nothing was changed")  # a schema trigger's message, written by us
    return InternalError("the database failed; nothing was changed, see the server log")


class Database:
    """A SQLite database file with per-thread connections and a serialised write path.

    :class:`~store.db._postgres.PostgresDatabase` is the same interface over PostgreSQL.
    """

    backend = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        readonly: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        write_attempts: int = WRITE_ATTEMPTS,
    ):
        self.path = Path(path)
        self.readonly = readonly
        self.busy_timeout_ms = busy_timeout_ms
        self.write_attempts = write_attempts
        self._local = threading.local()
        self._inline = threading.local()  # .active: inside run_inline on this thread; .conn: its connection
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._workers = Workers(8, "sqlite")
        self._closed = False

    # -- connections ---------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use (inside :meth:`run_inline`: its own)."""
        inline = getattr(self._inline, "active", False)
        where = self._inline if inline else self._local
        conn: sqlite3.Connection | None = getattr(where, "conn", None)
        if conn is None:
            if self._closed:
                raise InternalError("the database is closed")
            conn = self._open(inline=inline)
            where.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _open(self, *, inline: bool = False) -> sqlite3.Connection:
        # An inline connection waits for no lock (busy is at once an answer: run it on a worker
        # instead) and refuses writes even if one slipped past write()'s own check.
        busy_timeout_ms = 0 if inline else int(self.busy_timeout_ms)
        uri = f"file:{self.path}?mode=ro" if self.readonly else f"file:{self.path}"
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute(f"PRAGMA mmap_size = {_MMAP_SIZE}")
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        if inline:
            conn.execute("PRAGMA query_only = ON")
        elif not self.readonly:
            self._ensure_wal(conn)  # may wait for a lock; the store's own connections set WAL first
        return conn

    def _ensure_wal(self, conn: sqlite3.Connection) -> None:
        # WAL is persistent in the file, so this usually finds it already set. Switching needs an
        # exclusive lock and SQLite may answer BUSY without calling the busy handler when several
        # processes open a new database at once, hence the explicit retries.
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            return
        for attempt in Retrying(
            retry=retry_if_exception(is_busy_error),
            stop=stop_after_attempt(50),
            wait=wait_random_exponential(multiplier=0.01, max=0.25),
            reraise=True,
        ):
            with attempt:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise InternalError(f"could not switch {self.path} to WAL (journal_mode={mode})")

    def close(self) -> None:
        """Close every connection this object opened (from any thread)."""
        self._closed = True
        self._workers.close()
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            with suppress(sqlite3.Error):  # already unusable; nothing more to release
                conn.close()
        self._local = threading.local()
        self._inline = threading.local()

    def describe(self) -> str:
        """Where the store lives (for messages and ``doctor``)."""
        return str(self.path)

    def migrate(self) -> list[str]:
        """Apply every migration not yet recorded; the names applied now."""
        self.connection()  # opens the file in WAL mode
        return apply_migrations(self.connection())

    def check(self) -> tuple[bool, str]:
        """``doctor``'s check: SQLite's ``quick_check``."""
        result = self.read(lambda conn: conn.execute("PRAGMA quick_check").fetchone()[0])
        return result == "ok", f"{self.path}: quick_check {result}"

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (a deferred constraint, an I/O error) leaves the transaction open and
            # the write lock held: end it, or every later write on this thread fails.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def write(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction; commit, or roll back on any error.

        ``fn`` may run more than once when another process holds the write lock past the busy
        timeout, so it must do nothing outside the database that it cannot repeat.
        """
        if self.readonly:
            raise InternalError("this database handle is read-only")
        if getattr(self._inline, "active", False):
            raise InternalError("a write never runs inline on the event loop; use Database.run")
        try:
            for attempt in Retrying(
                retry=retry_if_exception(is_busy_error),
                stop=stop_after_attempt(self.write_attempts),
                wait=wait_random_exponential(multiplier=0.05, max=1.0),
                reraise=True,
            ):
                with attempt:
                    return self._write_once(fn)
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc) from exc
        raise InternalError("unreachable: the retry loop neither returned nor raised")

    def _write_once(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        conn = self.connection()
        with self._write_lock, self._transaction(conn):
            return fn(conn)

    def read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn`` in one read transaction, so everything it reads is one snapshot."""
        try:
            conn = self.connection()
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc) from exc

    # -- async ---------------------------------------------------------------------------------

    async def run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a blocking store call in a worker thread; the event loop keeps running.

        A ``sqlite3`` error that ``fn`` lets out (it used :meth:`connection` directly) is translated
        like one from :meth:`write` or :meth:`read`.
        """
        try:
            return await self._workers.run(partial(fn, *args, **kwargs))
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc) from exc

    async def run_inline(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a brief, read-only store call on this thread; on a worker thread if SQLite is busy.

        For reads of a row or two by index made on every request (authenticating a bearer token),
        where the trip to a worker thread and back costs many times the read itself. ``fn`` runs
        here, reading through a connection of its own that waits for no lock (``busy_timeout = 0``)
        and cannot write (``query_only``; :meth:`write` refuses too). If SQLite answers busy, ``fn``
        runs again through :meth:`run`, so the answer is the same as from :meth:`run`, only sooner.
        ``fn`` must be a read that is safe to repeat, and brief: anything that scans belongs in
        :meth:`run`.
        """
        if getattr(self._inline, "active", False):  # already inline: a nested call reads here too
            return fn(*args, **kwargs)
        self._inline.active = True
        try:
            return fn(*args, **kwargs)
        except StoreBusy:
            pass  # fn's read went through read(), which translated the busy answer
        except sqlite3.Error as exc:
            if not is_busy_error(exc):
                raise translate_sqlite_error(exc) from exc
        finally:
            self._inline.active = False
        return await self.run(fn, *args, **kwargs)
