"""One write path for a new memory entry, one validator, one text rule, one class per route code.

``memory.record`` (MCP), ``POST /memories`` (HTTP) and a merge used to write three INSERTs through
two validators with two text rules; these tests pin that they now share one of each.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import store.memory as memory_package
from store import Store
from store.errors import (
    Conflict,
    InvalidArgument,
    InvalidExpectedRevision,
    InvalidMemory,
    InvalidMemoryAction,
    InvalidMemoryTarget,
    InvalidRevision,
    MemoryAliasCycle,
    MemoryMergeConflict,
    MemoryNotFound,
    MemoryResynthesisConflict,
    MemoryRevisionConflict,
    MemoryTargetNotFound,
    MemoryUpdateConflict,
    NotFound,
    ResynthesisRequestNotFound,
    RevisionNotFound,
    RoundtableError,
)
from store.memory import _admin, _links, _store, _write

MEMORY_SOURCES = Path(memory_package.__file__).parent
HTTP_ROUTES = MEMORY_SOURCES.parent.parent / "capabilities" / "http_api" / "_memories.py"
FIELDS: dict[str, Any] = {
    "scope": "T-7",
    "kind": "decision",
    "title": "Use SQLite",
    "body_md": "WAL mode.\n",
    "importance": 70,
}


def _rows(store: Store, sql: str, *params: object) -> list[dict[str, Any]]:
    def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        return [dict(row) for row in conn.execute(sql, params).fetchall()]

    return store.db.read(read)


def _entry_row(store: Store, memory_id: str) -> dict[str, Any]:
    (row,) = _rows(store, "SELECT * FROM memory_entries WHERE id = ?", memory_id)
    return row


def _created(store: Store, fields: dict[str, Any]) -> str:
    memory_id: str = store.memory_admin.create(fields, actor="alice").body["memory"]["id"]
    return memory_id


def test_mcp_and_http_write_the_same_row_where_their_contracts_agree(store: Store) -> None:
    over_mcp = store.memory.record(**FIELDS, source_event_id=0, actor="alice").id
    over_http = _created(store, {**FIELDS, "source_event_id": 0})
    mcp_row, http_row = _entry_row(store, over_mcp), _entry_row(store, over_http)
    # Where the contracts differ, and only there: HTTP's confidence and reliability default to 0.5.
    assert (mcp_row.pop("confidence"), mcp_row.pop("reliability")) == (None, None)
    assert (http_row.pop("confidence"), http_row.pop("reliability")) == (0.5, 0.5)
    for row in (mcp_row, http_row):
        assert row.pop("id").startswith("M-")
        assert row.pop("created_at") == row.pop("updated_at")
    assert mcp_row == http_row
    assert mcp_row["source_event_id"] is None  # 0 is stored as NULL on both surfaces

    history = "SELECT revision, title, body_md, reason, actor FROM memory_revisions WHERE memory_id = ?"
    assert _rows(store, history, over_mcp) == _rows(store, history, over_http)


def test_the_contracts_differ_only_as_documented(store: Store) -> None:
    secret = "password=hunter2"
    mcp = store.memory.record(scope="p", kind="k", title=secret, body_md=secret, importance=0, actor="op")
    http = store.memory_admin.create(
        {"scope": "p", "kind": "k", "title": secret, "body_md": secret, "importance": 0}, actor="op"
    ).body["memory"]
    assert (mcp.importance, http["importance"]) == (50, 0)  # memory.record: an explicit 0 becomes 50
    assert (mcp.title, mcp.body_md) == (secret, secret)  # memory.record stores text as given
    assert "hunter2" not in _entry_row(store, http["id"])["title"]  # HTTP redacts title and body
    # Each surface accepts its own fields only, refused with its own code.
    with pytest.raises(InvalidArgument) as over_mcp:
        store.memory.record_many(
            [{"scope": "p", "kind": "k", "title": "t", "body_md": "b", "tags": []}], actor="op"
        )
    assert over_mcp.value.code == "invalid_argument"
    with pytest.raises(InvalidMemory):
        store.memory_admin.create(
            {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "status": "x"}, actor="op"
        )


def test_exactly_one_insert_into_memory_entries() -> None:
    inserts = {
        path.name: len(re.findall(r"[\"']INSERT INTO memory_entries\b", path.read_text()))
        for path in MEMORY_SOURCES.glob("*.py")
    }
    assert {name: count for name, count in inserts.items() if count} == {"_write.py": 1}


def test_record_create_and_merge_all_write_through_insert_entry(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    insert = _write.insert_entry

    def spy(conn: sqlite3.Connection, entry: Any, **kwargs: Any) -> str:
        entry_id = insert(conn, entry, **kwargs)
        written.append(entry_id)
        return entry_id

    for module in (_store, _admin, _links):
        monkeypatch.setattr(module, "insert_entry", spy)
    recorded = store.memory.record(scope="p", kind="k", title="a", body_md="b", actor="op").id
    store.memory.record(memory_id=recorded, scope="p", kind="k", title="a2", body_md="b", actor="op")
    created = _created(store, {"scope": "p", "kind": "k", "title": "c", "body_md": "d"})
    merged = store.memory_admin.merge(created, recorded, actor="op").body["memory"]["id"]
    assert written == [recorded, created, merged]  # a replacement is an UPDATE, not a new entry
    assert merged.startswith("M-merge-")
    assert [
        r["reason"] for r in _rows(store, "SELECT reason FROM memory_revisions WHERE memory_id = ?", merged)
    ] == [f"merge of {created} into {recorded}"]


# -- one text rule, one ID shape ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["\x1b[2J cleared", "bell\x07", "del\x7f", "nul\x00"])
def test_control_characters_are_refused_on_every_surface(store: Store, text: str) -> None:
    with pytest.raises(InvalidArgument) as over_mcp:
        store.memory.record(scope="p", kind="k", title=text, body_md="b", actor="op")
    assert over_mcp.value.code == "invalid_argument"
    with pytest.raises(InvalidMemory):
        _created(store, {"scope": "p", "kind": "k", "title": "t", "body_md": text})
    kept = _created(store, {"scope": "p", "kind": "k", "title": "t", "body_md": "tab\tand\r\nnewline"})
    with pytest.raises(InvalidRevision):
        store.memory_admin.revise(kept, {"body_md": text, "expected_revision": 1}, actor="op")
    assert _rows(store, "SELECT count(*) AS n FROM memory_entries") == [{"n": 1}]


def test_a_memory_id_with_a_trailing_newline_is_refused(store: Store) -> None:
    """``re.match(r"^...$")`` accepts ``"M-1\\n"``, which would become a second, look-alike entry."""
    store.memory.record(memory_id="M-1", scope="p", kind="k", title="t", body_md="b", actor="op")
    for shaped in ("M-1\n", "M-1\r", "\nM-1"):
        with pytest.raises(InvalidArgument):
            store.memory.record(memory_id=shaped, scope="p", kind="k", title="x", body_md="y", actor="op")
        with pytest.raises(InvalidArgument):
            store.memory.mark_stale(memory_id=shaped, reason_md="why", actor="op")
        with pytest.raises(MemoryNotFound):
            store.memory_admin.get(shaped)
        assert not store.memory_admin.exists(shaped)
    assert [row["id"] for row in _rows(store, "SELECT id FROM memory_entries")] == ["M-1"]


# -- every route code a class ------------------------------------------------------------------------

ROUTE_CODES: list[tuple[type[RoundtableError], type[RoundtableError], str]] = [
    (InvalidMemory, InvalidArgument, "invalid_memory"),
    (InvalidRevision, InvalidArgument, "invalid_revision"),
    (InvalidExpectedRevision, InvalidArgument, "invalid_expected_revision"),
    (InvalidMemoryTarget, InvalidArgument, "invalid_memory_target"),
    (InvalidMemoryAction, InvalidArgument, "invalid_memory_action"),
    (MemoryNotFound, NotFound, "memory_not_found"),
    (MemoryTargetNotFound, NotFound, "memory_target_not_found"),
    (RevisionNotFound, NotFound, "revision_not_found"),
    (ResynthesisRequestNotFound, NotFound, "resynthesis_request_not_found"),
    (MemoryRevisionConflict, Conflict, "memory_revision_conflict"),
    (MemoryMergeConflict, Conflict, "memory_merge_conflict"),
    (MemoryUpdateConflict, Conflict, "memory_update_conflict"),
    (MemoryResynthesisConflict, Conflict, "memory_resynthesis_conflict"),
    (MemoryAliasCycle, Conflict, "memory_alias_cycle"),
]


@pytest.mark.parametrize(("error", "base", "code"), ROUTE_CODES, ids=[code for _, _, code in ROUTE_CODES])
def test_each_memory_route_code_is_a_class_with_its_base_status(
    error: type[RoundtableError], base: type[RoundtableError], code: str
) -> None:
    assert issubclass(error, base)
    assert error.code == code
    assert error.http_status == base.http_status
    assert error("x").to_dict()["code"] == code


@pytest.mark.parametrize("path", [*sorted(MEMORY_SOURCES.glob("*.py")), HTTP_ROUTES], ids=lambda p: p.name)
def test_memory_code_passes_no_code_literals(path: Path) -> None:
    assert not re.findall(r"\bcode=\"", path.read_text()), (
        f"{path}: raise the error class of the code instead"
    )


def _raises(call: Callable[[], object]) -> RoundtableError:
    with pytest.raises(RoundtableError) as caught:
        call()
    return caught.value


def test_route_errors_are_raised_as_their_classes(store: Store) -> None:
    memory_id = _created(store, {"scope": "p", "kind": "k", "title": "t", "body_md": "b"})
    admin = store.memory_admin
    assert isinstance(_raises(lambda: admin.create({"title": " "}, actor="op")), InvalidMemory)
    assert isinstance(_raises(lambda: admin.revise(memory_id, {"body_md": ""}, actor="op")), InvalidRevision)
    stale = _raises(lambda: admin.revise(memory_id, {"body_md": "c", "expected_revision": 9}, actor="op"))
    assert isinstance(stale, MemoryRevisionConflict)
    assert isinstance(_raises(lambda: admin.diff(memory_id, "7")), RevisionNotFound)
    assert isinstance(_raises(lambda: admin.merge(memory_id, "", actor="op")), InvalidMemoryTarget)
    assert isinstance(_raises(lambda: admin.merge(memory_id, "M-none", actor="op")), MemoryTargetNotFound)
    assert isinstance(_raises(lambda: admin.merge(memory_id, memory_id, actor="op")), MemoryMergeConflict)
    assert isinstance(_raises(lambda: admin.act(memory_id, "burn", actor="op")), InvalidMemoryAction)
    assert isinstance(_raises(lambda: admin.act(memory_id, "restore", actor="op")), MemoryUpdateConflict)
    admin.request_resynthesis(memory_id, actor="op")
    again = _raises(lambda: admin.request_resynthesis(memory_id, actor="op"))
    assert isinstance(again, MemoryResynthesisConflict)
    missing = _raises(lambda: admin.fulfil_resynthesis("RS-none", lambda e, h: "x", provider="lexical"))
    assert isinstance(missing, ResynthesisRequestNotFound)
