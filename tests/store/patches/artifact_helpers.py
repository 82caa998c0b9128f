"""Reaching a stored patch version's bytes behind the store's back, on either backend."""

from __future__ import annotations

import hashlib
from pathlib import Path

from store import Store, patch_relative_path

__all__ = ["stored_blobs", "stored_files", "tamper"]


def stored_files(store: Store) -> list[str]:
    """Every file under ``.roundtable/patches``, relative to it (empty when it does not exist)."""
    folder = Path(store.paths.patches_dir)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def stored_blobs(store: Store) -> list[tuple[str, int, int]]:
    """``(proposal_id, version, size)`` of every ``patch_blobs`` row (PostgreSQL only)."""
    rows = store.db.read(
        lambda conn: conn.execute(
            "SELECT proposal_id, version, octet_length(content) FROM patch_blobs ORDER BY 1, 2"
        ).fetchall()
    )
    return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def tamper(store: Store, proposal_id: str, version: int, data: bytes, *, own_hash: bool = True) -> None:
    """Replace a version's stored bytes as someone with direct access could.

    SQLite: the file is made writable and rewritten. PostgreSQL: the blob is updated by the
    table's owner with the immutability trigger disabled, its own ``sha256``/``size_bytes``
    columns rewritten to agree (``own_hash``), or, with ``own_hash=False``, the content alone with
    the table's consistency checks dropped.
    """
    if store.db.backend != "postgresql":
        path = store.paths.root.joinpath(*patch_relative_path(proposal_id, version))
        path.chmod(0o644)
        path.write_bytes(data)
        return
    conn = store.db.connection()  # autocommit, the project's search_path
    conn.execute("BEGIN")
    conn.execute("ALTER TABLE patch_blobs DISABLE TRIGGER patch_blobs_no_update")
    if own_hash:
        conn.execute(
            "UPDATE patch_blobs SET content = ?, sha256 = ?, size_bytes = ?"
            " WHERE proposal_id = ? AND version = ?",
            (data, hashlib.sha256(data).hexdigest(), len(data), proposal_id, version),
        )
    else:
        conn.execute("ALTER TABLE patch_blobs DROP CONSTRAINT patch_blobs_size_matches")
        conn.execute("ALTER TABLE patch_blobs DROP CONSTRAINT patch_blobs_hash_matches")
        conn.execute(
            "UPDATE patch_blobs SET content = ? WHERE proposal_id = ? AND version = ?",
            (data, proposal_id, version),
        )
    conn.execute("ALTER TABLE patch_blobs ENABLE TRIGGER patch_blobs_no_update")
    conn.execute("COMMIT")
