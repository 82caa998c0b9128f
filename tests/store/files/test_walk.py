"""The one no-symlink walk, on both of its paths: the artifact reader and the writers.

Each check of SECURITY.md "Safe file access" (no symlink, the root's device, a regular file with
one link, the size cap) and the one errno translation must hold for :class:`SafeFiles` and for the
writers alike (:class:`RepoFiles` in the working tree, artifacts under ``.roundtable``), so every
refusal here is asserted on both.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from store import ProjectPaths, Store
from store.errors import ArtifactMismatch, UnsafePath
from store.files import SafeFiles, opened_dir
from store.files._walk import unsafe_path_error
from store.patches import FileState, RepoFiles, read_rollback_artifact, write_rollback_artifact

DATA = b"hello\n"
PARTS = ("src", "pkg", "mod.py")
PATH = "/".join(PARTS)
CAP = 1 << 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A working tree with one file two directories down, and an outside directory beside it."""
    tree = tmp_path / "root"
    tree.joinpath(*PARTS[:-1]).mkdir(parents=True)
    tree.joinpath(*PARTS).write_bytes(DATA)
    (tmp_path / "outside").mkdir()
    return tree


@pytest.fixture
def safe(root: Path) -> Iterator[SafeFiles]:
    with closing(SafeFiles(root)) as opened:
        yield opened


def repo(root: Path, *, max_bytes: int = CAP) -> RepoFiles:
    return RepoFiles(root, max_bytes=max_bytes)


def writers_refuse(root: Path, path: str = PATH, *, match: str) -> None:
    """Reading, writing and deleting ``path`` through :class:`RepoFiles` are all :class:`UnsafePath`."""
    files = repo(root)
    for attempt in (
        lambda: files.read(path),
        lambda: files.write(path, FileState(b"new\n", 0o644)),
        lambda: files.delete(path),
    ):
        with pytest.raises(UnsafePath, match=match):
            attempt()


def reader_refuses(safe: SafeFiles, parts: tuple[str, ...] = PARTS, *, match: str) -> None:
    with pytest.raises(UnsafePath, match=match):
        safe.read_unverified(parts, max_bytes=CAP)


def on_another_device(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Make ``fstat`` and ``stat`` report ``path``'s inode on another device, as a mount would."""
    target = path.lstat().st_ino
    real_fstat, real_stat = os.fstat, os.stat

    def moved(info: os.stat_result) -> os.stat_result:
        if info.st_ino != target:
            return info
        fields = list(info[:10])
        fields[2] = info.st_dev + 1  # st_dev
        return os.stat_result(fields)

    def fstat(fd: int) -> os.stat_result:
        return moved(real_fstat(fd))

    def fake_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return moved(real_stat(path, *args, **kwargs))

    monkeypatch.setattr(os, "fstat", fstat)
    monkeypatch.setattr(os, "stat", fake_stat)


# -- the device of every directory and file ----------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2], ids=["src", "src/pkg"])
def test_a_directory_on_another_device_is_refused_by_reader_and_writers(
    root: Path, safe: SafeFiles, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    on_another_device(monkeypatch, root.joinpath(*PARTS[:depth]))
    reader_refuses(safe, match="another file system")
    writers_refuse(root, match="another file system")
    writers_refuse(root, "src/pkg/new/file.py", match="another file system")
    monkeypatch.undo()
    assert root.joinpath(*PARTS).read_bytes() == DATA
    assert not root.joinpath("src", "pkg", "new").exists()


def test_a_file_on_another_device_is_refused_by_reader_and_writers(
    root: Path, safe: SafeFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_another_device(monkeypatch, root.joinpath(*PARTS))
    reader_refuses(safe, match="another file system")
    with pytest.raises(UnsafePath, match="another file system"):
        repo(root).read(PATH)
    with pytest.raises(UnsafePath, match="another file system"):
        repo(root).delete(PATH)
    monkeypatch.undo()
    assert root.joinpath(*PARTS).read_bytes() == DATA


def test_a_patch_directory_on_another_device_is_refused_for_stage_and_read(
    project: ProjectPaths, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = project.patches_dir / "P-1"
    folder.mkdir()
    (folder / "v1.diff").write_bytes(DATA)
    on_another_device(monkeypatch, folder)
    with pytest.raises(UnsafePath, match="another file system"):
        store.patches.stage("P-1", 2, b"x", ["x"])
    with pytest.raises(UnsafePath, match="another file system"):
        store.files.read_unverified((".roundtable", "patches", "P-1", "v1.diff"), max_bytes=CAP)
    monkeypatch.undo()
    assert sorted(path.name for path in folder.iterdir()) == ["v1.diff"]


# -- the errno translation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (errno.ELOOP, "is a symlink"),
        (errno.EMLINK, "is a symlink"),
        (errno.ENOTDIR, "is a symlink or not a directory"),
        (errno.ENXIO, "is not a regular file"),
    ],
)
def test_the_one_errno_translation(code: int, reason: str) -> None:
    error = unsafe_path_error(OSError(code, os.strerror(code)), "a/b")
    assert isinstance(error, UnsafePath) and error.message == f"a/b {reason}"
    for other in (errno.EACCES, errno.EIO, errno.ENOSPC):
        assert unsafe_path_error(OSError(other, os.strerror(other)), "a/b") is None


def test_a_symlinked_directory_is_unsafe_for_every_writer(root: Path, tmp_path: Path) -> None:
    (root / "src" / "pkg").rename(tmp_path / "outside" / "pkg")
    (root / "src" / "pkg").symlink_to(tmp_path / "outside" / "pkg", target_is_directory=True)
    writers_refuse(root, match="src/pkg is a symlink or not a directory")
    writers_refuse(root, "src/pkg/deeper/new.py", match="src/pkg is a symlink or not a directory")
    with pytest.raises(UnsafePath, match="symlink"), opened_dir(root, ("src", "pkg"), create=True):
        pass
    assert (tmp_path / "outside" / "pkg" / "mod.py").read_bytes() == DATA
    assert sorted(path.name for path in (tmp_path / "outside" / "pkg").iterdir()) == ["mod.py"]


def test_a_dangling_symlink_is_not_created_through(root: Path, tmp_path: Path) -> None:
    (root / "gone").symlink_to(tmp_path / "outside" / "not-yet", target_is_directory=True)
    with pytest.raises(UnsafePath, match="gone is a symlink"):
        repo(root).write("gone/new.py", FileState(b"x", 0o644))
    assert not (tmp_path / "outside" / "not-yet").exists()


def test_a_symlinked_rollback_directory_is_unsafe(project: ProjectPaths, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project.state_dir / "rollbacks").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafePath, match="rollbacks is a symlink"):
        write_rollback_artifact(project.root, "X-1", {}, {"a.py": FileState(None)})
    with pytest.raises(UnsafePath, match="rollbacks is a symlink"):
        read_rollback_artifact(project.root, "X-1")
    assert list(elsewhere.iterdir()) == []


def test_a_file_where_a_directory_must_be_is_unsafe_on_both_paths(root: Path, safe: SafeFiles) -> None:
    reader_refuses(safe, (*PARTS, "below"), match=r"mod\.py is a symlink or not a directory")
    with pytest.raises(UnsafePath, match=r"mod\.py is a symlink or not a directory"):
        repo(root).write(f"{PATH}/below", FileState(b"x", 0o644))


def swap_for_a_symlink_on_open(monkeypatch: pytest.MonkeyPatch, path: Path, target: Path) -> None:
    """Replace ``path`` by a symlink to ``target`` just before it is opened (after its lstat)."""
    real_open: Callable[..., int] = os.open

    def racing_open(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if name == path.name and not flags & os.O_DIRECTORY and not path.is_symlink():
            path.unlink()
            path.symlink_to(target)
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)


def test_a_file_swapped_for_a_symlink_after_its_lstat_is_unsafe_on_both_paths(
    root: Path, safe: SafeFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "outside" / "secret"
    secret.write_bytes(b"SECRET\n")
    path = root.joinpath(*PARTS)
    swap_for_a_symlink_on_open(monkeypatch, path, secret)
    reader_refuses(safe, match=r"mod\.py is a symlink")
    path.unlink()
    path.write_bytes(DATA)
    with pytest.raises(UnsafePath, match=r"mod\.py is a symlink"):
        repo(root).read(PATH)


# -- regular files with one link, within the cap -----------------------------------------------


def test_a_hard_linked_file_is_refused_by_reader_and_writers(
    root: Path, safe: SafeFiles, tmp_path: Path
) -> None:
    os.link(root.joinpath(*PARTS), tmp_path / "outside" / "alias.py")
    reader_refuses(safe, match="2 links")
    with pytest.raises(UnsafePath, match="2 links"):
        repo(root).read(PATH)
    with pytest.raises(UnsafePath, match="2 links"):
        repo(root).delete(PATH)
    assert (tmp_path / "outside" / "alias.py").read_bytes() == DATA


def test_fifos_and_directories_are_refused_without_blocking(root: Path, safe: SafeFiles) -> None:
    fifo = root / "src" / "pipe"
    os.mkfifo(fifo)
    reader_refuses(safe, ("src", "pipe"), match="not a regular file")
    with pytest.raises(UnsafePath, match="not a regular file"):
        repo(root).read("src/pipe")
    with pytest.raises(UnsafePath, match="not a regular file"):
        repo(root).delete("src/pipe")
    with pytest.raises(UnsafePath, match="not a regular file"):
        repo(root).read("src/pkg")
    assert fifo.exists()


def test_the_size_cap_holds_on_both_paths(root: Path, safe: SafeFiles) -> None:
    with pytest.raises(UnsafePath, match="limit"):
        safe.read_unverified(PARTS, max_bytes=len(DATA) - 1)
    with pytest.raises(UnsafePath, match="limit"):
        repo(root, max_bytes=len(DATA) - 1).read(PATH)
    assert repo(root, max_bytes=len(DATA)).read(PATH).content == DATA


def test_absence_is_absence_for_writers_and_a_mismatch_for_the_reader(root: Path, safe: SafeFiles) -> None:
    files = repo(root)
    assert files.read("src/nowhere/x.py") == FileState(None)
    assert files.read("src/pkg/x.py") == FileState(None)
    files.delete("src/nowhere/x.py")
    with pytest.raises(ArtifactMismatch, match="src/nowhere is missing"):
        safe.read_unverified(("src", "nowhere", "x.py"), max_bytes=CAP)
    with pytest.raises(ArtifactMismatch, match=r"src/pkg/x\.py is missing"):
        safe.read_unverified(("src", "pkg", "x.py"), max_bytes=CAP)


@pytest.mark.parametrize("path", ["../x.py", "/etc/passwd", "src//mod.py", "src/./mod.py", "src/mod\x00.py"])
def test_bad_components_are_refused_by_the_writers(root: Path, path: str) -> None:
    writers_refuse(root, path, match="refusing path component")
