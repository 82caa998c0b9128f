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
    for spec in dataclasses.fields(cls):
        if not spec.init:
            continue
        if spec.name in overrides:
            values[spec.name] = overrides[spec.name]
        elif spec.name in columns:
            values[spec.name] = row[spec.name]
    return cls(**values)


def as_dict(record: DataclassInstance, *, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record's fields as a JSON-ready dict, in field order, without copying nested values."""
    return {
        spec.name: getattr(record, spec.name)
        for spec in dataclasses.fields(record)
        if spec.name not in exclude
    }


def fetch_row(conn: sqlite3.Connection, table: str, noun: str, row_id: str) -> sqlite3.Row:
    """The row of ``table`` whose ID is ``row_id`` (on the caller's connection), or
    :class:`~store.errors.NotFound` naming the ``noun``. ``table`` is always a literal of ours."""
    row = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if row is None:
        raise NotFound(f"{noun} {row_id} does not exist")
    return row  # type: ignore[no-any-return]
