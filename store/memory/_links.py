"""Links between memory entries: aliases, provenance source chains, and merges.

Fixed against the seed:

- the alias graph resolves the canonical chain (``alias -> canonical -> ...``) with cycle
  detection, and lists the IDs that resolve here, instead of only the direct rows;
- the source chain follows memory-to-memory provenance edges recursively up to ``depth`` and
  marks sources that do not exist (``missing``) and loops (``cycle``);
- a canonical merge writes the new entry through the one write path of every new entry
  (:func:`store.memory._write.insert_entry`: revision 1 and provenance edges), and refuses (409
  ``memory_merge_conflict``) inputs already merged, archived, the same entry twice, or inputs whose
  alias chains would form a cycle; merge-legacy checks that its target exists.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from store._ids import new_id, utc_now_iso
from store._text import parse_decimal
from store.errors import InvalidArgument, InvalidMemoryTarget, MemoryMergeConflict, MemoryTargetNotFound
from store.memory._checks import merged_checks
from store.memory._entry import parse_json_column
from store.memory._new_entry import NewEntry
from store.memory._ownership import MemoryWriter
from store.memory._redaction import redact
from store.memory._views import load_memory, memory_view
from store.memory._write import insert_entry, record_change

__all__ = ["MAX_DEPTH", "alias_graph", "merge_in", "merge_legacy_in", "resolve_aliases", "source_chain"]

MAX_DEPTH = 10
MAX_CHAIN = 1_000
_SOURCE_TABLES = {
    "memory": ("memory_entries", "id"),
    "event": ("events", "id"),
    "proposal": ("proposals", "id"),
    "task": ("tasks", "id"),
    "decision": ("decisions", "id"),
}


def resolve_aliases(conn: sqlite3.Connection, memory_id: str) -> tuple[list[str], bool]:
    """The chain ``[memory_id, canonical, ...]`` following alias rows, and whether it loops."""
    chain = [memory_id]
    seen = {memory_id}
    current = memory_id
    while len(chain) < MAX_CHAIN:
        row = conn.execute(
            "SELECT canonical_id FROM memory_aliases WHERE alias_id = ?", (current,)
        ).fetchone()
        if row is None:
            return chain, False
        current = row["canonical_id"]
        chain.append(current)
        if current in seen:
            return chain, True
        seen.add(current)
    return chain, True  # longer than any real chain: treat as a loop


def _alias_row(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "alias_id": row["alias_id"],
        "canonical_id": row["canonical_id"],
        "reason": None if row["reason"] is None else redact(row["reason"]),
        "actor": row["actor"],
        "created_at": row["created_at"],
    }


def alias_graph(conn: sqlite3.Connection, memory_id: str) -> dict[str, Any]:
    """Direct alias rows, the resolved canonical chain, and every ID that resolves here."""
    load_memory(conn, memory_id)
    rows = conn.execute(
        "SELECT * FROM memory_aliases WHERE alias_id = ? OR canonical_id = ? ORDER BY created_at, alias_id",
        (memory_id, memory_id),
    ).fetchall()
    chain, cycle = resolve_aliases(conn, memory_id)
    aliased_from: list[str] = []
    frontier, seen = [memory_id], {memory_id}
    while frontier and len(aliased_from) < MAX_CHAIN:
        found = conn.execute(
            f"SELECT alias_id FROM memory_aliases WHERE canonical_id IN ({','.join('?' * len(frontier))})"
            " ORDER BY created_at, alias_id",
            frontier,
        ).fetchall()
        frontier = [r["alias_id"] for r in found if r["alias_id"] not in seen]
        seen.update(frontier)
        aliased_from.extend(frontier)
    return {
        "memory_id": memory_id,
        "items": [_alias_row(row) for row in rows],
        "canonical_chain": chain,
        "canonical_id": None if cycle else chain[-1],
        "cycle": cycle,
        "aliased_from": aliased_from,
    }


def _source_exists(conn: sqlite3.Connection, source_type: str, source_id: str) -> bool | None:
    table = _SOURCE_TABLES.get(source_type)
    if table is None:
        return None  # a kind of source this project does not store: unknown, not missing
    name, column = table
    key: object = source_id
    if name == "events":
        number = parse_decimal(source_id)
        if number is None:
            return False
        key = number
    try:
        return conn.execute(f"SELECT 1 FROM {name} WHERE {column} = ?", (key,)).fetchone() is not None
    except sqlite3.OperationalError:  # the table's migration is not applied in this database
        return None


def source_chain(conn: sqlite3.Connection, memory_id: str, depth: int = 1) -> dict[str, Any]:
    """Provenance edges of ``memory_id``, following memory sources down to ``depth`` levels."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidArgument(f"depth must be an integer from 1 to {MAX_DEPTH}")
    load_memory(conn, memory_id)
    return {"memory_id": memory_id, "depth": depth, "items": _edges(conn, memory_id, depth, {memory_id})}


def _edges(conn: sqlite3.Connection, memory_id: str, depth: int, path: set[str]) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT * FROM memory_provenance_edges WHERE memory_id = ? ORDER BY created_at, id", (memory_id,)
    ).fetchall()
    out = []
    for row in rows:
        source_type, source_id = row["source_type"], row["source_id"]
        exists = _source_exists(conn, source_type, source_id)
        node: dict[str, Any] = {
            "id": int(row["id"]),
            "memory_id": memory_id,
            "source_type": source_type,
            "source_id": redact(source_id),
            "relation": row["relation"],
            "created_at": row["created_at"],
            "exists": exists,
            "missing": exists is False,
        }
        if source_type == "memory" and exists:
            source = load_memory(conn, source_id)
            node["source"] = {"id": source_id, "title": redact(source["title"]), "status": source["status"]}
            if source_id in path:
                node["cycle"] = True
            elif depth > 1:
                node["sources"] = _edges(conn, source_id, depth - 1, path | {source_id})
        out.append(node)
    return out


def _merge_inputs(
    conn: sqlite3.Connection, source_id: str, target_id: str
) -> tuple[sqlite3.Row, sqlite3.Row]:
    if not target_id:
        raise InvalidMemoryTarget("target_id is required")
    source = load_memory(conn, source_id)
    target = load_memory(conn, target_id, error=MemoryTargetNotFound)
    if source_id == target_id:
        raise MemoryMergeConflict("an entry cannot be merged into itself (a cycle)")
    for row in (source, target):
        if row["status"] in ("merged", "archived"):
            raise MemoryMergeConflict(
                f"memory entry {row['id']} is {row['status']}; it cannot be merged again"
            )
    for first, second in ((source_id, target_id), (target_id, source_id)):
        chain, cycle = resolve_aliases(conn, first)
        if cycle or second in chain or len(chain) > 1:
            raise MemoryMergeConflict(
                f"merging {source_id} and {target_id} would form a cycle or re-merge an alias "
                f"({' -> '.join(chain)})"
            )
    return source, target


def _average(a: float | None, b: float | None) -> float:
    known = [value for value in (a, b) if value is not None]
    return sum(known) / len(known) if known else 0.5


def merge_in(conn: sqlite3.Connection, *, source_id: str, target_id: str, actor: str) -> dict[str, Any]:
    """A new canonical ``M-merge-...`` entry from ``source`` and ``target``; both become ``merged``."""
    source, target = _merge_inputs(conn, source_id, target_id)
    now = utc_now_iso()
    merged = NewEntry(
        id=new_id("M-merge"),
        scope=target["scope"],
        kind=target["kind"],
        title=redact(target["title"]),
        body_md=redact(f"{target['body_md']}\n\n{source['body_md']}"),
        importance=int(target["importance"]),
        tags=tuple(parse_json_column(target["tags"], [])),
        provenance={"merged_from": [source_id, target_id], "target_provenance": _json(target["provenance"])},
        sources=(("memory", target_id, "merged_from_target"), ("memory", source_id, "merged_from_source")),
        confidence=_average(source["confidence"], target["confidence"]),
        reliability=_average(source["reliability"], target["reliability"]),
        checks=merged_checks(target["kind"], *(parse_json_column(e["checks"], []) for e in (target, source))),
    )
    canonical_id = insert_entry(
        conn,
        merged,
        actor=actor,
        now=now,
        writer=MemoryWriter.operator(actor),  # merging is curation: operators only
        reason=f"merge of {source_id} into {target_id}",
        history={"merged_from": [source_id, target_id]},
    )
    conn.executemany(
        "INSERT INTO memory_aliases (alias_id, canonical_id, reason, actor, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(old, canonical_id, "merge", actor, now) for old in (source_id, target_id)],
    )
    conn.execute(
        "UPDATE memory_entries SET status = 'merged', updated_at = ? WHERE id IN (?, ?)",
        (now, source_id, target_id),
    )
    record_change(
        conn,
        "memory.merged",
        actor=actor,
        memory_id=canonical_id,
        scope=target["scope"],
        payload={"canonical_id": canonical_id, "source_id": source_id, "target_id": target_id},
    )
    return {
        "memory": memory_view(load_memory(conn, canonical_id)),
        "merged": [memory_view(load_memory(conn, source_id)), memory_view(load_memory(conn, target_id))],
        "aliases": [
            _alias_row(r)
            for r in conn.execute(
                "SELECT * FROM memory_aliases WHERE canonical_id = ? ORDER BY alias_id", (canonical_id,)
            )
        ],
    }


def _json(text: object) -> Any:
    try:
        return json.loads(str(text)) if text else {}
    except ValueError:
        return {}


def merge_legacy_in(
    conn: sqlite3.Connection, *, source_id: str, target_id: str, actor: str
) -> dict[str, Any]:
    """The seed's legacy merge: mark ``source`` merged with ``merged_into`` in its provenance."""
    if not target_id:
        raise InvalidMemoryTarget("target_id is required")
    source = load_memory(conn, source_id)
    load_memory(conn, target_id, error=MemoryTargetNotFound)
    if source_id == target_id:
        raise MemoryMergeConflict("an entry cannot be merged into itself")
    if source["status"] == "merged":
        raise MemoryMergeConflict(f"memory entry {source_id} is already merged")
    provenance = _json(source["provenance"])
    if not isinstance(provenance, dict):
        provenance = {"previous": provenance}
    provenance["merged_into"] = target_id
    now = utc_now_iso()
    conn.execute(
        "UPDATE memory_entries SET status = 'merged', provenance = ?, updated_at = ? WHERE id = ?",
        (json.dumps(provenance, sort_keys=True), now, source_id),
    )
    record_change(
        conn,
        "memory.merged_legacy",
        actor=actor,
        memory_id=source_id,
        scope=source["scope"],
        payload={"target_id": target_id},
    )
    return {"memory": memory_view(load_memory(conn, source_id))}
