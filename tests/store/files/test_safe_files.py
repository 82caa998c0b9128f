"""The no-follow artifact reader: SECURITY.md tests 14 and 15."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from store import ProjectPaths, Store
from store.errors import ArtifactMismatch, InternalError, UnsafePath
from store.files import SafeFiles, check_components, split_relative

INSIDE = b"--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-old\n+new\n"
OUTSIDE = b"SECRET FROM OUTSIDE THE TREE\n"
PARTS = (".roundtable", "patches", "P-1", "v1.diff")
CAP = 1 << 20


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project root with one patch artifact, and an outside directory with a decoy."""
    root = tmp_path / "root"
    patch_dir = root.joinpath(*PARTS[:-1])
    patch_dir.mkdir(parents=True)
    (patch_dir / PARTS[-1]).write_bytes(INSIDE)
    (patch_dir / PARTS[-1]).chmod(0o444)
    outside = tmp_path / "outside"
    outside.joinpath(*PARTS[1:-1]).mkdir(parents=True)
    outside.joinpath(*PARTS[1:]).write_bytes(OUTSIDE)
    return root


@pytest.fixture
def files(tree: Path) -> Iterator[SafeFiles]:
    opened = SafeFiles(tree)
    try:
        yield opened
    finally:
        opened.close()


def outside_of(tree: Path) -> Path:
    return tree.parent / "outside"


def test_reads_a_plain_artifact(files: SafeFiles) -> None:
    artifact = files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)
    assert artifact.data == INSIDE
    assert artifact.sha256 == sha(INSIDE)
    assert artifact.size_bytes == len(INSIDE)
    assert files.read_artifact(PARTS, expected_sha256=sha(INSIDE).upper(), max_bytes=CAP).data == INSIDE


@pytest.mark.parametrize("depth", [1, 2, 3], ids=[".roundtable", "patches", "proposal-dir"])
def test_a_symlinked_directory_on_the_way_is_refused(tree: Path, files: SafeFiles, depth: int) -> None:
    """``.roundtable``, ``patches`` or the proposal directory replaced by a symlink to a decoy."""
    target = tree.joinpath(*PARTS[:depth])
    decoy = outside_of(tree).joinpath(*PARTS[1:depth]) if depth > 1 else outside_of(tree)
    if depth == 1:
        decoy = outside_of(tree) / "state"
        decoy.joinpath(*PARTS[1:-1]).mkdir(parents=True)
        decoy.joinpath(*PARTS[1:]).write_bytes(INSIDE)  # same bytes: only the walk can refuse it
    else:
        decoy.joinpath(*PARTS[depth:]).write_bytes(INSIDE)
    target.rename(target.with_name(target.name + ".real"))
    target.symlink_to(decoy, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symlink"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)
    with pytest.raises(UnsafePath):
        files.read_unverified(PARTS, max_bytes=CAP)


def test_a_symlinked_file_is_refused_even_to_a_file_inside_the_tree(tree: Path, files: SafeFiles) -> None:
    link = tree.joinpath(*PARTS)
    sibling = link.with_name("v0.diff")
    link.rename(sibling)
    link.symlink_to(sibling)
    with pytest.raises(UnsafePath, match="symlink"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)
    link.unlink()
    link.symlink_to(outside_of(tree).joinpath(*PARTS[1:]))
    with pytest.raises(UnsafePath, match="symlink"):
        files.read_unverified(PARTS, max_bytes=CAP)


@pytest.mark.parametrize(
    "parts",
    [
        (".roundtable", "patches", "..", "..", "outside", "patches", "P-1", "v1.diff"),
        (".roundtable", "patches", "P-1", ".."),
        ("/etc", "passwd"),
        (".roundtable", "/etc/passwd"),
        (".roundtable", "patches/P-1/v1.diff"),
        (".roundtable", "", "v1.diff"),
        (".", ".roundtable", "patches", "P-1", "v1.diff"),
        (".roundtable", "patches", "P-1", "v1.diff\x00"),
        (),
    ],
)
def test_bad_components_are_refused(files: SafeFiles, parts: tuple[str, ...]) -> None:
    with pytest.raises(UnsafePath):
        files.read_artifact(parts, expected_sha256=sha(INSIDE), max_bytes=CAP)


def test_component_helpers() -> None:
    assert split_relative(".roundtable/patches/P-1/v1.diff") == PARTS
    assert check_components(list(PARTS)) == PARTS
    for bad in ("/etc/passwd", "../x", "a//b", "a/./b", "a/b/", "a\x00b", ""):
        with pytest.raises(UnsafePath):
            split_relative(bad)
    with pytest.raises(UnsafePath):
        check_components(".roundtable/patches")  # a string is not a sequence of components


def test_a_fifo_is_refused_without_blocking(tree: Path, files: SafeFiles) -> None:
    path = tree.joinpath(*PARTS)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(UnsafePath, match="not a regular file"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)


def test_a_directory_in_place_of_the_file_is_refused(tree: Path, files: SafeFiles) -> None:
    path = tree.joinpath(*PARTS)
    path.unlink()
    path.mkdir()
    with pytest.raises(UnsafePath, match="not a regular file"):
        files.read_unverified(PARTS, max_bytes=CAP)


def test_a_hard_linked_file_is_refused(tree: Path, files: SafeFiles) -> None:
    os.link(tree.joinpath(*PARTS), outside_of(tree) / "alias.diff")
    with pytest.raises(UnsafePath, match="links"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)


def test_an_oversized_file_is_refused(files: SafeFiles) -> None:
    with pytest.raises(UnsafePath, match="limit"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=len(INSIDE) - 1)
    exact = files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=len(INSIDE))
    assert exact.data == INSIDE


def test_a_changed_file_is_an_artifact_mismatch(tree: Path, files: SafeFiles) -> None:
    path = tree.joinpath(*PARTS)
    path.chmod(0o644)
    path.write_bytes(INSIDE + b"+sneaky\n")
    with pytest.raises(ArtifactMismatch, match="SHA-256"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)


def test_a_missing_file_is_an_artifact_mismatch(tree: Path, files: SafeFiles) -> None:
    tree.joinpath(*PARTS).unlink()
    with pytest.raises(ArtifactMismatch, match="missing"):
        files.read_artifact(PARTS, expected_sha256=sha(INSIDE), max_bytes=CAP)
    with pytest.raises(ArtifactMismatch, match="missing"):
        files.read_artifact(
            (".roundtable", "patches", "P-2", "v1.diff"), expected_sha256=sha(INSIDE), max_bytes=CAP
        )


def test_the_root_handle_survives_a_renamed_root_and_closes(tree: Path) -> None:
    files = SafeFiles(tree)
    moved = tree.with_name("renamed")
    tree.rename(moved)
    # The handle was opened at start-up: it keeps naming the same directory.
    assert files.read_unverified(PARTS, max_bytes=CAP).data == INSIDE
    files.close()
    files.close()
    with pytest.raises(InternalError):
        files.read_unverified(PARTS, max_bytes=CAP)


def test_the_store_holds_a_root_handle(project: ProjectPaths, store: Store) -> None:
    parts = (".roundtable", "patches", "x.diff")
    project.patches_dir.joinpath("x.diff").write_bytes(b"x")
    assert store.files.read_artifact(parts, expected_sha256=sha(b"x"), max_bytes=10).data == b"x"


@pytest.mark.parametrize("depth", [1, 2, 3], ids=[".roundtable", "patches", "proposal-dir"])
def test_swapping_a_directory_for_a_symlink_while_reading_never_leaks(
    tree: Path, files: SafeFiles, depth: int
) -> None:
    """A thread keeps swapping a directory on the way with a symlink to a decoy; reads loop."""
    target = tree.joinpath(*PARTS[:depth])
    real = target.with_name(target.name + ".real")
    link = target.with_name(target.name + ".link")
    decoy = outside_of(tree) / f"decoy-{depth}"
    decoy.joinpath(*PARTS[depth:-1]).mkdir(parents=True, exist_ok=True)
    decoy.joinpath(*PARTS[depth:]).write_bytes(OUTSIDE)
    link.symlink_to(decoy, target_is_directory=True)

    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            target.rename(real)  # the real directory steps aside...
            link.rename(target)  # ...and the symlink takes its name
            target.rename(link)
            real.rename(target)
            swaps += 1

    outcomes = {"ok": 0, "unsafe": 0, "missing": 0}
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for _ in range(3000):
            try:
                data = files.read_unverified(PARTS, max_bytes=CAP).data
            except UnsafePath:
                outcomes["unsafe"] += 1
                continue
            except ArtifactMismatch:
                outcomes["missing"] += 1  # caught between two renames
                continue
            assert data == INSIDE, "read bytes from outside the tree"
            outcomes["ok"] += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert swaps > 0
    # Both kinds of outcome happened, so the race was really exercised.
    assert outcomes["ok"] > 0
    assert outcomes["unsafe"] + outcomes["missing"] > 0, outcomes
