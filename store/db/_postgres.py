"""The PostgreSQL store: :class:`PostgresDatabase`, the same interface as the SQLite one.

Selected by ``[store] url`` / ``ROUNDTABLE_STORE_URL`` = ``postgresql://...``. One database serves
several projects: each project's tables live in its own schema (``[store] schema``; every
connection's ``search_path`` is that schema, then ``public``), created by the first migration.

Isolation, in place of SQLite's single writer (``BEGIN IMMEDIATE``):

- a write is a ``READ COMMITTED`` transaction that first takes a transaction-scoped advisory lock
  keyed by the project's schema (``pg_advisory_xact_lock``). Writers of one project run one at a
  time, exactly as under SQLite's write lock, so every read-check-then-write in the store (the
  next patch version, a state move's permitted prior state, an idempotency key) sees every write
  committed before it, and event IDs increase in commit order (an ``events?after=ID`` reader never
  misses a row that commits late). ``SERIALIZABLE`` would also prevent the anomalies, but not the
  late commit of a lower event ID, and it would retry whole transactions under contention that the
  lock simply queues. Writers of different projects never wait for each other;
- a read is a ``REPEATABLE READ READ ONLY`` transaction: one snapshot, no lock, never blocked by a
  writer (SQLite's WAL read transaction);
- a lock wait past ``lock_timeout``, a deadlock or a serialization failure is retried like SQLite's
  busy answer (tenacity, bounded), then :class:`~store.errors.StoreBusy`.

Connections come from a :class:`psycopg_pool.ConnectionPool` (autocommit; the transactions above
are explicit). :meth:`PostgresDatabase.run_inline` runs on a worker thread like :meth:`run`: a
PostgreSQL read is a network round trip, never something to do on the event loop.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from store._ids import utc_now_iso
from store.db._connection import WRITE_ATTEMPTS, Database
from store.db._pg_sql import PgConnection, configure_connection, is_retryable, translate_pg_error
from store.db._url import PostgresUrl, schema_name_ok
from store.db._workers import Workers
from store.errors import InternalError, InvalidArgument, StoreUnavailable

if TYPE_CHECKING:
    import sqlite3

__all__ = ["PostgresDatabase", "default_schema", "pg_migration_names"]

_T = TypeVar("_T")
_P = ParamSpec("_P")

LOCK_TIMEOUT_MS = 15_000
_MIGRATION_LOCK = 0x52545047  # "RTPG": every project's migrations, one at a time (CREATE EXTENSION)


def default_schema(root: Path) -> str:
    """The schema of a project that names none: ``rt_`` and 24 hex digits of its root's SHA-256."""
    return "rt_" + hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:24]


def pg_migration_names() -> list[str]:
    """The migrations shipped in ``store/db/pg_schema``, in order (the same names as ``schema``)."""
    folder = resources.files("store.db") / "pg_schema"
    return sorted(e.name.removesuffix(".sql") for e in folder.iterdir() if e.name.endswith(".sql"))


def _connect_error(url: PostgresUrl, exc: psycopg.Error) -> StoreUnavailable:
    """What went wrong connecting, naming the server and database but never the password."""
    text = str(exc)
    if url.password:
        text = text.replace(url.password, "***")
    lower = text.lower()
    if "password" in lower or "authentication" in lower or ("role" in lower and "does not exist" in lower):
        reason = f"the server refused the credentials of user {url.user or '(default)'}"
    elif "database" in lower and "does not exist" in lower:
        reason = "the server has no such database"
    else:
        reason = "the server cannot be reached"
    detail = text.strip().splitlines()[-1][:300] if text.strip() else type(exc).__name__
    return StoreUnavailable(
        f"cannot open the PostgreSQL store at host {url.host} port {url.port} database {url.database}: "
        f"{reason} ({detail}); nothing was created"
    )


class PostgresDatabase(Database):
    """A project's schema in a PostgreSQL database, with the interface of :class:`Database`."""

    backend = "postgresql"

    def __init__(
        self,
        url: PostgresUrl,
        schema: str,
        *,
        write_attempts: int = WRITE_ATTEMPTS,
        lock_timeout_ms: int = LOCK_TIMEOUT_MS,
        max_connections: int = 8,
    ):
        if not schema_name_ok(schema):
            raise InvalidArgument(f"[store] schema: {schema[:70]!r} is not a lower-case identifier")
        self.url = url
        self.schema = schema
        self.path = Path(url.describe())  # never opened: names the store in messages, as the SQLite path does
        self.readonly = False
        self.busy_timeout_ms = lock_timeout_ms
        self.write_attempts = write_attempts
        self._lock_key = int.from_bytes(hashlib.sha256(schema.encode()).digest()[:8], "big", signed=True)
        self._local = threading.local()
        self._pg_conns: list[psycopg.Connection[Any]] = []
        self._all_lock = threading.Lock()
        self._workers = Workers(max_connections, f"postgres-{schema}")
        self._closed = False
        self._probe()  # fails before anything is created when the server will not have us
        self._pool = ConnectionPool(
            kwargs={**url.connect_kwargs(), "autocommit": True},
            min_size=1,
            max_size=max_connections,
            configure=self._configure,
            name=f"roundtable-{schema}",
            num_workers=1,
            open=True,
        )

    def describe(self) -> str:
        """Where the store lives, without the password."""
        return f"{self.url.describe()} schema {self.schema}"

    # -- connections ---------------------------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        configure_connection(conn, self.schema, self.busy_timeout_ms)

    def _probe(self) -> None:
        try:
            psycopg.connect(**self.url.connect_kwargs()).close()
        except psycopg.Error as exc:
            raise _connect_error(self.url, exc) from exc

    def connection(self) -> sqlite3.Connection:
        """This thread's own autocommit connection (for ad hoc statements; the store uses the pool)."""
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise InternalError("the database is closed")
            try:
                raw = psycopg.connect(**self.url.connect_kwargs(), autocommit=True)
            except psycopg.Error as exc:
                raise _connect_error(self.url, exc) from exc
            self._configure(raw)
            conn = PgConnection(raw)
            self._local.conn = conn
            with self._all_lock:
                self._pg_conns.append(raw)
        return cast("sqlite3.Connection", conn)  # the subset of it the store uses (_pg_sql)

    def close(self) -> None:
        """Close the pool and every connection this object opened (from any thread)."""
        self._closed = True
        self._workers.close()
        self._pool.close()
        with self._all_lock:
            conns, self._pg_conns = self._pg_conns, []
        for conn in conns:
            with suppress(psycopg.Error):
                conn.close()
        self._local = threading.local()

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def _pg_transaction(self, begin: str, *, lock: bool) -> Iterator[PgConnection]:
        try:
            with self._pool.connection() as raw:
                raw.execute(begin)
                try:
                    if lock:
                        raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    yield PgConnection(raw)
                except BaseException:
                    if not raw.closed:
                        raw.execute("ROLLBACK")
                    raise
                raw.execute("COMMIT")
        except PoolTimeout as exc:
            raise StoreUnavailable(
                f"no connection to {self.url.describe()} became free; nothing was changed"
            ) from exc

    def write(self, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn`` in one write transaction holding the project's lock; commit or roll back.

        ``fn`` may run more than once (a lock timeout, a deadlock), so it must do nothing outside
        the database that it cannot repeat -- the same rule as on SQLite.
        """
        try:
            for attempt in Retrying(
                retry=retry_if_exception(is_retryable),
                stop=stop_after_attempt(self.write_attempts),
                wait=wait_random_exponential(multiplier=0.05, max=1.0),
                reraise=True,
            ):
                with attempt, self._pg_transaction("BEGIN ISOLATION LEVEL READ COMMITTED", lock=True) as conn:
                    return fn(conn)
        except psycopg.Error as exc:
            raise translate_pg_error(exc) from exc
        raise InternalError("unreachable: the retry loop neither returned nor raised")

    def read(self, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn`` in one read-only snapshot (``REPEATABLE READ``)."""
        try:
            with self._pg_transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", lock=False) as conn:
                return fn(conn)
        except psycopg.Error as exc:
            raise translate_pg_error(exc) from exc

    # -- async ---------------------------------------------------------------------------------

    async def run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a blocking store call in a worker thread; the event loop keeps running."""
        try:
            return await self._workers.run(partial(fn, *args, **kwargs))
        except psycopg.Error as exc:
            raise translate_pg_error(exc) from exc

    async def run_inline(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """As :meth:`run`: a PostgreSQL read is a network round trip, never made on the event loop."""
        return await self.run(fn, *args, **kwargs)

    # -- schema --------------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        """Create the project's schema when missing and apply every migration not yet recorded."""
        folder = resources.files("store.db") / "pg_schema"
        applied: list[str] = []

        def step(conn: PgConnection, name: str | None) -> None:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            if name is None:
                conn.raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')  # checked identifier
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
                return
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                return
            conn.raw.execute((folder / f"{name}.sql").read_text(encoding="utf-8").encode())
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, utc_now_iso())
            )
            applied.append(name)

        for name in [None, *pg_migration_names()]:
            self.write(partial(step, name=name))
        return applied

    def check(self) -> tuple[bool, str]:
        """``doctor``'s check: the server answers, and every shipped migration is applied."""

        def look(conn: PgConnection) -> tuple[str, int]:
            row = conn.execute("SELECT current_setting('server_version'), count(*) FROM schema_migrations")
            version, done = row.fetchone() or ("?", 0)
            return str(version), int(done)

        version, done = self.read(look)
        shipped = len(pg_migration_names())
        return (
            done == shipped,
            f"{self.describe()}: PostgreSQL {version}, migrations {done}/{shipped} applied",
        )
