"""One piece of SQL for both backends: the store's sqlite3-style SQL on a psycopg connection.

The store's modules call ``conn.execute(sql, params)`` with SQLite's placeholders (``?`` and
``:name``) and read rows by column name and by index. :class:`PgConnection` gives a psycopg 3
connection that surface, so those modules run unchanged on PostgreSQL:

- :func:`translate` rewrites placeholders (``?`` -> ``%s``, ``:name`` -> ``%(name)s``, a literal
  ``%`` -> ``%%``), outside quoted strings and identifiers, once per distinct statement (cached);
- :class:`Row` is a tuple that also answers ``row["column"]`` and ``row.keys()``, as
  :class:`sqlite3.Row` does (so ``dict(row)`` works too);
- ``numeric`` results (``sum()`` of integers) come back as ``int`` when whole, like SQLite's;
- the few SQLite functions the SQL calls (``instr``, ``json_extract``) exist in every project's
  schema as SQL functions (``pg_schema/0001``), and tables the SQL orders by SQLite's implicit
  ``rowid`` have an explicit identity column of that name.

:func:`translate_pg_error` is the PostgreSQL half of the error boundary: the same
:class:`~store.errors.RoundtableError` classes, for the same reasons, as
:func:`~store.db._connection.translate_sqlite_error`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

import psycopg
import psycopg.errors
from psycopg.adapt import Loader
from psycopg.rows import RowMaker

from store.errors import Conflict, InternalError, RoundtableError, StoreBusy, StoreUnavailable

__all__ = ["PgConnection", "Row", "configure_connection", "is_retryable", "translate", "translate_pg_error"]

RETRYABLE_STATES = frozenset({"40001", "40P01", "55P03"})
"""serialization_failure, deadlock_detected, lock_not_available: the transaction may be retried."""


@lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """``sql`` with SQLite's placeholders in psycopg's style; quoted text is left as it is."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:  # a doubled quote stays inside
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif ch == "?":
            out.append("%s")
            i += 1
        elif (
            ch == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_") and sql[i - 1 : i] != ":"
        ):
            end = i + 1
            while end < n and (sql[end].isalnum() or sql[end] == "_"):
                end += 1
            out.append(f"%({sql[i + 1 : end]})s")
            i = end
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class Row(tuple[Any, ...]):
    """A result row read by index or by column name, like :class:`sqlite3.Row`."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Row:
        """A row of ``values`` whose columns are ``names`` (name -> index)."""
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        """``row[0]``, ``row[1:]`` or ``row["column"]``."""
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names[key])
            except KeyError:
                raise IndexError(f"No item with that key: {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        return Row(values, names)

    return make


class _WholeNumericLoader(Loader):
    """``numeric`` as ``int`` when it is whole (``sum()`` of integers), else ``float``."""

    def load(self, data: Any) -> int | float:
        value = Decimal(bytes(data).decode("ascii"))
        return int(value) if value == value.to_integral_value() else float(value)


def configure_connection(conn: psycopg.Connection[Any], schema: str, lock_timeout_ms: int) -> None:
    """Set a new connection up: rows, numeric results, the project's schema, the lock timeout."""
    conn.adapters.register_loader("numeric", _WholeNumericLoader)
    conn.row_factory = _row_factory
    # set_config() takes the values as parameters: nothing of ours is spliced into SQL text.
    conn.execute(
        "SELECT set_config('search_path', %s, false), set_config('lock_timeout', %s, false)",
        (f'"{schema}", public', f"{int(lock_timeout_ms)}ms"),
    )


class PgConnection:
    """The part of :class:`sqlite3.Connection` the store's modules use, over psycopg."""

    backend = "postgresql"
    """What SQL that must differ by dialect (memory search) asks, as ``Database.backend``."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> psycopg.Cursor[Any]:
        """Run one statement; ``?``/``:name`` placeholders as SQLite takes them."""
        return self.raw.execute(translate(sql), params if isinstance(params, Mapping) else tuple(params))

    def executemany(self, sql: str, seq: Iterator[Any] | Sequence[Any]) -> psycopg.Cursor[Any]:
        """Run one statement once per parameter set."""
        cursor = self.raw.cursor()
        cursor.executemany(translate(sql), [p if isinstance(p, Mapping) else tuple(p) for p in seq])
        return cursor

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on the connection."""
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL saying the transaction lost a race and may be run again."""
    return isinstance(exc, psycopg.Error) and exc.sqlstate in RETRYABLE_STATES


def translate_pg_error(exc: psycopg.Error) -> RoundtableError:
    """Our error for a psycopg error that reached the database boundary (the caller chains it)."""
    if exc.sqlstate in RETRYABLE_STATES:
        return StoreBusy("the database stayed locked by another writer; nothing was changed, try again")
    if isinstance(exc, psycopg.errors.IntegrityError):
        if exc.sqlstate == "23000" and exc.diag.message_primary:  # refuse_change(): a message of ours
            return Conflict(f"{exc.diag.message_primary}; nothing was changed")
        return Conflict("the change conflicts with stored data; nothing was changed")
    if (isinstance(exc, psycopg.OperationalError) and (exc.sqlstate or "").startswith("08")) or (
        exc.sqlstate is None and isinstance(exc, psycopg.OperationalError)
    ):
        return StoreUnavailable("the PostgreSQL server stopped answering; nothing was changed, try again")
    # Like SQLite's: no table, column or SQL in the message; the psycopg error stays chained.
    return InternalError("the database failed; nothing was changed, see the server log")
