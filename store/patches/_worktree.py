"""The project's own files, as ``patch.validate`` and ``patch.apply`` see them.

:class:`RepoFiles` reads and writes files of the working tree through the one no-symlink walk of
:mod:`store.files` (a patch path whose directory is a symlink or on another file system, or whose
file is not a regular file with one link, is ``unsafe_path``, so a patch can never write outside the
project). It is the seam for fault injection: a test subclass
can fail part-way through an apply.

A state hash summarises a set of files (path, SHA-256 of the content or ``absent``, mode), so a
transaction row can record the state before and after an apply. The rollback artifact holds the
pre-image of every touched file and is written durably before any file is touched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store._project import STATE_DIR_NAME
from store.files import create_file_at, open_dir, opened_dir, read_file_at, remove_file_at, replace_file_at

__all__ = ["FileState", "RepoFiles", "read_rollback_artifact", "state_hash", "write_rollback_artifact"]

ROLLBACKS_DIR_NAME = "rollbacks"


@dataclass(frozen=True)
class FileState:
    """One file's content and permission bits, or absence (``content is None``)."""

    content: bytes | None
    mode: int | None = None

    @property
    def sha256(self) -> str | None:
        """The content's SHA-256, ``None`` when absent."""
        return None if self.content is None else hashlib.sha256(self.content).hexdigest()


def state_hash(states: dict[str, FileState]) -> str:
    """A SHA-256 over every path's content hash and mode, in path order."""
    digest = hashlib.sha256()
    for path in sorted(states):
        state = states[path]
        mode = "-" if state.mode is None else format(state.mode, "o")
        digest.update(f"{path}\0{state.sha256 or 'absent'}\0{mode}\n".encode())
    return digest.hexdigest()


class RepoFiles:
    """Files of the working tree under ``root``, reached without following symlinks."""

    def __init__(self, root: Path, *, max_bytes: int):
        self.root = root
        self.max_bytes = max_bytes
        self.created_dirs: list[str] = []

    def _parent(self, path: str, *, create: bool) -> tuple[int, str]:
        parts = path.split("/")
        fd, created = open_dir(self.root, parts[:-1], create=create)
        self.created_dirs.extend(created)
        return fd, parts[-1]

    def read(self, path: str) -> FileState:
        """The current state of ``path`` (absent when it or a parent directory does not exist)."""
        try:
            fd, name = self._parent(path, create=False)
        except FileNotFoundError:
            return FileState(None)
        try:
            found = read_file_at(fd, name, max_bytes=self.max_bytes, where=path)
        finally:
            os.close(fd)
        if found is None:
            return FileState(None)
        data, info = found
        return FileState(data, stat.S_IMODE(info.st_mode))

    def write(self, path: str, state: FileState) -> None:
        """Make ``path`` hold ``state``: create or replace it atomically, or delete it."""
        if state.content is None:
            self.delete(path)
            return
        fd, name = self._parent(path, create=True)
        try:
            replace_file_at(fd, name, state.content, mode=state.mode if state.mode is not None else 0o644)
        finally:
            os.close(fd)

    def delete(self, path: str) -> None:
        """Remove ``path`` if it exists."""
        try:
            fd, name = self._parent(path, create=False)
        except FileNotFoundError:
            return
        try:
            remove_file_at(fd, name, where=path)
        finally:
            os.close(fd)

    def remove_created_dirs(self) -> None:
        """Remove the directories this object created, deepest first, when empty (after a rollback)."""
        for rel in sorted(set(self.created_dirs), key=lambda p: p.count("/"), reverse=True):
            parts = rel.split("/")
            try:
                with opened_dir(self.root, parts[:-1]) as fd:
                    os.rmdir(parts[-1], dir_fd=fd)
                    os.fsync(fd)
            except OSError:
                continue  # not empty, or already gone: leave it
        self.created_dirs.clear()


def rollback_relative_path(transaction_id: str) -> tuple[str, ...]:
    """Where the rollback artifact of an apply transaction lives, under the project root."""
    return (STATE_DIR_NAME, ROLLBACKS_DIR_NAME, f"{transaction_id}.json")


def write_rollback_artifact(
    root: Path, transaction_id: str, header: dict[str, Any], pre: dict[str, FileState]
) -> str:
    """Durably write the pre-images of every touched file; returns the artifact's relative path."""
    files = [
        {
            "path": path,
            "existed": state.content is not None,
            "mode": state.mode,
            "sha256": state.sha256,
            "content_b64": None if state.content is None else base64.b64encode(state.content).decode("ascii"),
        }
        for path, state in sorted(pre.items())
    ]
    body = json.dumps({**header, "transaction_id": transaction_id, "files": files}, sort_keys=True).encode()
    parts = rollback_relative_path(transaction_id)
    with opened_dir(root, parts[:-1], create=True) as fd:
        create_file_at(fd, parts[-1], body, mode=0o400)
    return "/".join(parts)


def read_rollback_artifact(root: Path, transaction_id: str) -> dict[str, FileState]:
    """The pre-images recorded for a transaction."""
    parts = rollback_relative_path(transaction_id)
    with opened_dir(root, parts[:-1]) as fd:
        found = read_file_at(fd, parts[-1], max_bytes=1 << 34)
    if found is None:
        raise FileNotFoundError("/".join(parts))
    body = json.loads(found[0])
    return {
        item["path"]: FileState(
            None if item["content_b64"] is None else base64.b64decode(item["content_b64"]), item["mode"]
        )
        for item in body["files"]
    }
