"""Rows to records and records to JSON: one converter for every frozen row dataclass.

A record type names its fields after its table's columns, so building one from a row and
projecting it to JSON need no per-type code::

    task = from_row(Task, row)                    # every field read from the column of its name
    grant = from_row(GrantRecord, row, scopes=tuple(json.loads(row["scopes"])))   # decoded ones given
    answer = as_dict(task)                        # {field: value}, in field order (shallow)

A column a record does not name is ignored; a field with a default may be missing from the row.
"""

from __future__ import annotations

import dataclasses
import functools
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from store.errors import NotFound

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["as_dict", "fetch_row", "from_row"]

RecordT = TypeVar("RecordT", bound="DataclassInstance")

Row = sqlite3.Row | Mapping[str, Any]


def from_row(cls: type[RecordT], row: Row, **overrides: Any) -> RecordT:
    """A ``cls`` whose fields are read from the columns of the same name; ``overrides`` win."""
    columns = set(row.keys())
    values: dict[str, Any] = {}
    for name in _init_fields(cls):
        if name in overrides:
            values[name] = overrides[name]
        elif name in columns:
            values[name] = row[name]
    return cls(**values)


@functools.cache
def _field_names(cls: type[Any]) -> tuple[str, ...]:
    """The names of every field of the dataclass ``cls``, in order (see :func:`_init_fields`)."""
    return tuple(spec.name for spec in dataclasses.fields(cls))


@functools.cache
def _init_fields(cls: type[Any]) -> tuple[str, ...]:
    """The names of ``cls``'s ``__init__`` fields, in order, worked out once per class:
    ``dataclasses.fields`` builds its answer anew on every call, and every row read builds a record."""
    return tuple(spec.name for spec in dataclasses.fields(cls) if spec.init)


def as_dict(record: DataclassInstance, *, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record's fields as a JSON-ready dict, in field order, without copying nested values."""
    return {name: getattr(record, name) for name in _field_names(type(record)) if name not in exclude}


def fetch_row(conn: sqlite3.Connection, table: str, noun: str, row_id: str) -> sqlite3.Row:
    """The row of ``table`` whose ID is ``row_id`` (on the caller's connection), or
    :class:`~store.errors.NotFound` naming the ``noun``. ``table`` is always a literal of ours."""
    row = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if row is None:
        raise NotFound(f"{noun} {row_id} does not exist")
    return row  # type: ignore[no-any-return]
