"""Which database a project's store lives in: ``[store] url`` or ``ROUNDTABLE_STORE_URL``.

The environment variable wins over the configuration file. An empty URL (the default) or
``sqlite`` is the project's own SQLite file, ``.roundtable/roundtable.db``; ``postgresql://...``
(or ``postgres://...``) is a PostgreSQL server reached through psycopg 3.

A PostgreSQL URL carries a password more often than not, so a :class:`PostgresUrl` never shows it:
its ``repr`` and :meth:`PostgresUrl.describe` name the user, host, port and database only, and every
error about a URL is built from those parts (never from the URL's text), so the password cannot
reach a log line, an event, an error or ``doctor`` output.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from store.errors import InvalidArgument

__all__ = ["ENV_STORE_URL", "PostgresUrl", "parse_store_url", "schema_name_ok"]

ENV_STORE_URL = "ROUNDTABLE_STORE_URL"
"""The environment variable that selects the store; it wins over ``[store] url``."""

_SCHEMES = ("postgresql", "postgres")
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_PORT = re.compile(r"[0-9]{1,5}")
# libpq's URI query parameters we pass through (anything else is a typo we refuse, not ignore).
_QUERY_KEYS = frozenset(
    {"host", "hostaddr", "port", "dbname", "user", "sslmode", "sslrootcert", "sslcert", "sslkey",
     "connect_timeout", "application_name", "target_session_attrs", "gssencmode", "channel_binding"}
)  # fmt: skip


def schema_name_ok(name: str) -> bool:
    """Whether ``name`` is a schema name we create and quote nowhere (lower case, 1..63 chars)."""
    return _SCHEMA.fullmatch(name) is not None


@dataclass(frozen=True)
class PostgresUrl:
    """A parsed ``postgresql://`` URL; its password is kept out of ``repr`` and every message."""

    host: str
    port: int
    database: str
    user: str
    password: str | None = field(default=None, repr=False)
    options: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """``user@host:port/database`` -- how errors and ``doctor`` name the server."""
        user = f"{self.user}@" if self.user else ""
        return f"postgresql://{user}{self.host}:{self.port}/{self.database}"

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`psycopg.connect` (the password among them)."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": str(self.port),
            "dbname": self.database,
            **dict(self.options),
        }
        if self.user:
            kwargs["user"] = self.user
        if self.password is not None:
            kwargs["password"] = self.password
        kwargs.setdefault("connect_timeout", "10")
        return kwargs


def parse_store_url(configured: str, *, environ: dict[str, str] | None = None) -> PostgresUrl | None:
    """The PostgreSQL URL in force, or ``None`` for the project's SQLite file.

    ``ROUNDTABLE_STORE_URL`` (when set and nonblank) wins over ``configured``. A URL that is
    neither is :class:`~store.errors.InvalidArgument`, with a message that shows no password.
    """
    env = os.environ if environ is None else environ
    text = (env.get(ENV_STORE_URL) or "").strip() or configured.strip()
    source = ENV_STORE_URL if (env.get(ENV_STORE_URL) or "").strip() else "[store] url"
    if text in ("", "sqlite"):
        return None
    scheme, sep, _ = text.partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        shown = scheme if sep else "(no scheme)"
        raise InvalidArgument(
            f"{source}: the store URL must be empty or 'sqlite' (the project's SQLite file) or "
            f"postgresql://user:password@host:port/database; its scheme is {shown[:40]!r}"
        )
    return _parse_postgres(text, source)


def _parse_postgres(text: str, source: str) -> PostgresUrl:
    def bad(what: str) -> InvalidArgument:
        return InvalidArgument(
            f"{source}: malformed PostgreSQL URL: {what} (the URL is not shown: it may hold a password)"
        )

    try:
        parts = urlsplit(text)
        netloc = parts.netloc
    except ValueError:
        raise bad("it cannot be parsed") from None
    userinfo, at, hostport = netloc.rpartition("@")
    user, colon, password = userinfo.partition(":") if at else ("", "", "")
    if "," in hostport:
        raise bad("several hosts are not supported")
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = hostport.partition(":")
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _QUERY_KEYS:
            raise bad(f"unknown query parameter {key[:40]!r}")
        options[key] = value
    host = unquote(host) or options.pop("host", "")
    if not host:
        raise bad("it names no host")
    port_text = port_text or options.pop("port", "5432")
    if not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        raise bad("its port is not a number from 1 to 65535")
    database = unquote(parts.path.removeprefix("/")) or options.pop("dbname", "")
    if not database or "/" in database:
        raise bad("it names no database (postgresql://host:port/DATABASE)")
    user = unquote(user) or options.pop("user", "")
    return PostgresUrl(
        host=host,
        port=int(port_text),
        database=database,
        user=user,
        password=unquote(password) if colon else None,
        options=tuple(sorted(options.items())),
    )
