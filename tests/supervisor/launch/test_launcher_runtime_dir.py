"""Per-launch runtime directories: short private paths, files only the container user can read."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from store import InternalError, InvalidArgument
from store._ids import new_id
from supervisor.launch._ownership import OwnerLock, live_owners
from supervisor.launch._runtime_dir import (
    CONTAINER_UID,
    MAX_SOCKET_PATH_BYTES,
    RuntimeRoot,
    default_runtime_base,
    launch_suffix,
)

AS_ROOT = os.geteuid() == 0


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_layout_is_private_short_and_owned_for_the_container_user(runtime_root: RuntimeRoot) -> None:
    launch_id = new_id("launch")
    rundir = runtime_root.create(launch_id)
    assert rundir.path == runtime_root.path / launch_suffix(launch_id)
    assert _mode(runtime_root.base) == _mode(runtime_root.path) == 0o700
    assert os.lstat(runtime_root.path).st_uid == os.geteuid()
    assert len(os.fsencode(rundir.socket_path)) <= MAX_SOCKET_PATH_BYTES

    token = "tok-" + "x" * 40
    path = rundir.write_token_file(token)
    assert path.read_text() == token
    if AS_ROOT:
        assert (os.lstat(rundir.path).st_uid, _mode(rundir.path)) == (CONTAINER_UID, 0o500)
        assert (os.lstat(path).st_uid, os.lstat(path).st_gid, _mode(path)) == (
            CONTAINER_UID,
            CONTAINER_UID,
            0o400,
        )
    else:
        assert _mode(rundir.path) == 0o711 and _mode(path) == 0o444
    with pytest.raises(FileExistsError):
        rundir.write_token_file(token)  # written once, never overwritten

    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(rundir.socket_path))
        rundir.grant_socket()
        info = os.lstat(rundir.socket_path)
        if AS_ROOT:
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (CONTAINER_UID, 0o600)
        else:
            assert stat.S_IMODE(info.st_mode) == 0o666

    assert rundir.container_token_path == "/run/roundtable/token"
    assert rundir.container_socket_path == "/run/roundtable/mcp.sock"
    rundir.remove()
    assert not rundir.path.exists()
    rundir.remove()  # idempotent


def test_bad_tokens_are_refused(runtime_root: RuntimeRoot) -> None:
    rundir = runtime_root.create(new_id("launch"))
    for bad in ("", "tab\tinside", "naïve"):
        with pytest.raises(InvalidArgument):
            rundir.write_token_file(bad)
    assert list(rundir.path.iterdir()) == []


def test_sweep_keeps_only_running_launches(runtime_root: RuntimeRoot) -> None:
    kept, gone = new_id("launch"), new_id("launch")
    runtime_root.create(kept)
    runtime_root.create(gone).write_token_file("abc")
    assert runtime_root.sweep(keep=[kept]) == [launch_suffix(gone)]
    assert [p.name for p in runtime_root.path.iterdir()] == [launch_suffix(kept)]


def test_a_symlinked_base_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "rt").symlink_to(target)
    with pytest.raises(InternalError, match="symlink"):
        RuntimeRoot("sup", base=tmp_path / "rt").ensure()


def test_a_base_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    if AS_ROOT:
        base, owner = tmp_path / "rt", 4242
        base.mkdir(mode=0o700)
        os.chown(base, owner, owner)
    else:
        base, owner = Path("/tmp"), 0  # someone else's directory we cannot take over
    with pytest.raises(InternalError, match=f"belongs to uid {owner}"):
        RuntimeRoot("sup", base=base).ensure()
    assert os.lstat(base).st_uid == owner


def test_a_loose_base_mode_is_tightened(tmp_path: Path) -> None:
    base = tmp_path / "rt"
    base.mkdir(mode=0o755)
    os.chmod(base, 0o755)  # noqa: S103 (the loose mode under test)
    RuntimeRoot("sup", base=base).ensure()
    assert _mode(base) == 0o700


def test_too_long_a_base_is_refused_up_front() -> None:
    with pytest.raises(InvalidArgument, match="too long for a Unix socket"):
        RuntimeRoot("sup", base=Path("/tmp") / ("d" * 100))


def test_bad_names_are_refused(runtime_root: RuntimeRoot) -> None:
    with pytest.raises(InvalidArgument):
        RuntimeRoot("../escape")
    with pytest.raises(InvalidArgument):
        runtime_root.create("L-../../etc")


def test_default_base_prefers_xdg_runtime_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_runtime_base() == tmp_path / "roundtable"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_runtime_base() == Path(f"/tmp/rt-{os.geteuid()}")


def test_removal_tolerates_the_socket_vanishing_under_it(
    runtime_root: RuntimeRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launch socket's server, stopping in the background, unlinks its socket while the
    directory is being removed: the removal still completes, and other errors still raise."""
    rundir = runtime_root.create(new_id("launch"))
    rundir.write_token_file("tok-" + "x" * 40)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(rundir.socket_path))
    listener.close()
    real_unlink = os.unlink

    def server_got_there_first(path: str, *args: object, **kwargs: object) -> None:
        if path == rundir.socket_path.name:
            real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", server_got_there_first)
    rundir.remove()
    assert not rundir.path.exists()

    other = runtime_root.create(new_id("launch"))
    other.write_token_file("tok-" + "y" * 40)

    def refused(path: str, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "refused", path)

    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(PermissionError):
        other.remove()


def test_tidy_removes_only_an_empty_directory(runtime_root: RuntimeRoot) -> None:
    rundir = runtime_root.create(new_id("launch"))
    runtime_root.tidy()  # a launch's directory is left: kept
    assert rundir.path.is_dir()
    rundir.remove()
    runtime_root.tidy()
    assert not runtime_root.path.exists()
    runtime_root.tidy()  # gone already: nothing to do


def test_create_survives_a_peer_tidying_the_directory_away(
    runtime_root: RuntimeRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two supervisors of one project: one ends and tidies the shared directory away between the
    other's ensure() and its mkdir. The launch's directory is made all the same."""
    ensure = runtime_root.ensure
    calls: list[Path] = []

    def ensure_then_peer_tidies() -> Path:
        path = ensure()
        if not calls:
            os.rmdir(path)  # what the peer's tidy() does
        calls.append(path)
        return path

    monkeypatch.setattr(runtime_root, "ensure", ensure_then_peer_tidies)
    rundir = runtime_root.create(new_id("launch"))
    assert rundir.path.is_dir() and len(calls) == 2


def test_owner_locks_leave_no_directory_behind(tmp_path: Path) -> None:
    directory = tmp_path / "owners" / "rtx"
    first, second = OwnerLock(directory), OwnerLock(directory)
    first.acquire()
    second.acquire()
    first.release()
    assert directory.is_dir()  # the other owner's lock is in it
    assert live_owners(directory, [second.name]) == {second.name}
    second.release()
    assert not directory.exists()
    second.acquire()  # made again
    assert live_owners(directory, [second.name]) == {second.name}
    second.release()
