"""The hand-off's trust checks: the serve file and socket must be private, a stale file is ignored
and removed, and the serve's socket serves its own user only (no engine needed)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from store import Store
from store.errors import NotFound
from supervisor._supervisor import Supervisor
from supervisor.cli._handoff import SERVE_FILE, find_serve, hand_off, raise_error_body
from supervisor.cli._handoff_server import handoff_listener
from supervisor.launch import RuntimeRoot, supervisor_id_for


@pytest.fixture
def short_base() -> Iterator[Path]:
    """A short private directory for runtime roots (sockets need short paths)."""
    base = Path(tempfile.mkdtemp(prefix="rth-", dir="/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def announce(state_dir: Path, socket_path: Path, *, mode: int = 0o600) -> Path:
    """Write a serve file naming ``socket_path``."""
    file = state_dir / SERVE_FILE
    file.write_text(json.dumps({"socket": str(socket_path), "pid": os.getpid()}))
    file.chmod(mode)
    return file


def listening_socket(path: Path, *, mode: int = 0o600) -> socket.socket:
    """A bound, listening Unix socket at ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    path.chmod(mode)
    sock.listen()
    return sock


def test_no_serve_file_means_no_hand_off(store: Store) -> None:
    assert find_serve(store.paths.state_dir) is None
    assert hand_off(store.paths.state_dir, "oracle.launch", {}, lambda *_: None) is None


def test_a_stale_serve_file_is_ignored_and_removed(store: Store, short_base: Path) -> None:
    # The socket is gone: its serve died.
    file = announce(store.paths.state_dir, short_base / "gone.sock")
    assert find_serve(store.paths.state_dir) is None
    assert not file.exists()
    # The socket is there but nobody listens on it any more.
    sock = listening_socket(short_base / "dead.sock")
    sock.close()
    file = announce(store.paths.state_dir, short_base / "dead.sock")
    phases: list[str] = []
    assert hand_off(store.paths.state_dir, "oracle.launch", {}, lambda phase, _: phases.append(phase)) is None
    assert not file.exists() and phases == []


@pytest.mark.parametrize(
    ("file_mode", "socket_mode"),
    [(0o644, 0o600), (0o600, 0o666), (0o600, 0o660)],
    ids=["file", "socket", "group"],
)
def test_a_serve_file_or_socket_open_to_others_is_not_trusted(
    store: Store, short_base: Path, file_mode: int, socket_mode: int
) -> None:
    sock = listening_socket(short_base / "s.sock", mode=socket_mode)
    try:
        announce(store.paths.state_dir, short_base / "s.sock", mode=file_mode)
        warnings: list[str] = []
        assert find_serve(store.paths.state_dir, warn=warnings.append) is None
        assert len(warnings) == 1 and "private" in warnings[0]
        assert find_serve(store.paths.state_dir, warn=warnings.append) is None
    finally:
        sock.close()
    # The same socket and file, private: trusted.
    sock = listening_socket(short_base / "t.sock")
    try:
        announce(store.paths.state_dir, short_base / "t.sock")
        target = find_serve(store.paths.state_dir, warn=warnings.append)
        assert target is not None and target.socket_path == str(short_base / "t.sock")
    finally:
        sock.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the files to another user")
def test_a_serve_file_of_another_user_is_not_trusted(store: Store, short_base: Path) -> None:
    sock = listening_socket(short_base / "s.sock")
    try:
        file = announce(store.paths.state_dir, short_base / "s.sock")
        os.chown(file, 65534, 65534)
        warnings: list[str] = []
        assert find_serve(store.paths.state_dir, warn=warnings.append) is None
        assert "belongs to uid 65534" in warnings[0]
    finally:
        sock.close()


def test_an_error_body_is_raised_as_its_own_class() -> None:
    with pytest.raises(NotFound, match="no such proposal"):
        raise_error_body({"code": "not_found", "message": "no such proposal"})


def runtime_root(store: Store, base: Path) -> RuntimeRoot:
    """The store's supervisor's runtime root under ``base``."""
    return RuntimeRoot(supervisor_id_for(store.paths.root), base=base / "rt")


@pytest.fixture
async def listener(store: Store, short_base: Path) -> AsyncIterator[tuple[Supervisor, Path]]:
    """A hand-off listener on a (not started) supervisor of ``store``."""
    supervisor = Supervisor(
        store, runtime=RuntimeRoot(supervisor_id_for(store.paths.root), base=short_base / "rt")
    )
    async with handoff_listener(supervisor) as socket_path:
        yield supervisor, socket_path


def _exchange(socket_path: str, request: bytes) -> list[dict[str, object]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(socket_path)
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        return [json.loads(line) for line in sock.makefile("rb")]


@pytest.mark.anyio
async def test_the_listener_announces_itself_privately_and_withdraws(store: Store, short_base: Path) -> None:
    supervisor = Supervisor(
        store, runtime=RuntimeRoot(supervisor_id_for(store.paths.root), base=short_base / "rt")
    )
    async with handoff_listener(supervisor) as socket_path:
        target = find_serve(store.paths.state_dir)
        assert target is not None and target.socket_path == str(socket_path) and target.pid == os.getpid()
        assert oct(socket_path.stat().st_mode & 0o777) == oct(0o600)
        answer = await anyio.to_thread.run_sync(_exchange, str(socket_path), b'{"op": "nope", "args": {}}\n')
        assert answer == [
            {"error": {"code": "invalid_argument", "message": "unknown hand-off operation 'nope'"}}
        ]
    assert not (store.paths.state_dir / SERVE_FILE).exists() and not socket_path.exists()


def _connect_and_leave(socket_path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(socket_path)  # and gone before the server's first word


@pytest.mark.anyio
async def test_a_peer_that_leaves_or_sends_deep_json_does_not_stop_the_listener(
    listener: tuple[Supervisor, Path],
) -> None:
    _, socket_path = listener
    for _ in range(3):
        await anyio.to_thread.run_sync(_connect_and_leave, str(socket_path))
    deep = await anyio.to_thread.run_sync(_exchange, str(socket_path), b"[" * 60_000 + b"\n")
    assert [line["error"]["code"] for line in deep] == ["invalid_argument"]  # type: ignore[index]
    not_an_object = await anyio.to_thread.run_sync(_exchange, str(socket_path), b"[1]\n")
    assert [line["error"]["code"] for line in not_an_object] == ["invalid_argument"]  # type: ignore[index]
    # Still serving: the next request gets its own answer.
    answer = await anyio.to_thread.run_sync(_exchange, str(socket_path), b'{"op": "nope", "args": {}}\n')
    assert answer[0]["error"]["code"] == "invalid_argument"  # type: ignore[index]


@pytest.mark.anyio
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
async def test_the_handoff_socket_refuses_another_user(
    listener: tuple[Supervisor, Path], short_base: Path
) -> None:
    _, socket_path = listener
    # Another user cannot even reach the socket (private directory, 0600). Give them a way in, a
    # world-writable link to the same socket, to show the server checks the peer itself.
    link = short_base / "public" / "s.sock"

    def open_a_way_in() -> None:
        link.parent.mkdir()
        for directory in (link.parent, short_base):
            directory.chmod(0o755)
        os.link(socket_path, link)
        link.chmod(0o666)

    await anyio.to_thread.run_sync(open_a_way_in)

    def as_nobody() -> bytes:
        """Connect through the link as uid 65534 in a forked child; what the server answered."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: drop to nobody, ask, pass the answer up, and leave at once
            try:
                os.close(read_end)
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.connect(str(link))
                    # The server may answer and close before the request is sent: its word stays
                    # readable, whatever the send says.
                    with contextlib.suppress(OSError):
                        sock.sendall(b'{"op": "oracle.launch", "args": {"proposal_id": "P-x"}}\n')
                    os.write(write_end, sock.makefile("rb").readline())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as answer:
            line = answer.read()
        os.waitpid(pid, 0)
        return line

    answer = await anyio.to_thread.run_sync(as_nobody)
    assert json.loads(answer)["error"]["code"] == "forbidden"


def test_the_state_directory_is_found_as_the_store_finds_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store._project import STATE_DIR_NAME
    from supervisor.cli._handoff import STATE_DIR, state_dir_of

    assert STATE_DIR == STATE_DIR_NAME
    assert state_dir_of(store.paths.root) == str(store.paths.state_dir)
    (store.paths.root / "sub").mkdir()
    monkeypatch.chdir(store.paths.root / "sub")
    assert state_dir_of(None) == str(store.paths.state_dir)
    assert state_dir_of(store.paths.root / "sub") is None


@pytest.mark.anyio
async def test_a_socket_served_by_another_process_than_the_announced_one_gets_no_launch(
    listener: tuple[Supervisor, Path], store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """The path is checked before the connect, the peer after it: a file naming another pid than the
    one at the socket is not trusted, and the launch runs in this process (nothing is sent)."""
    del listener  # it serves the socket the file names
    file = store.paths.state_dir / SERVE_FILE
    announced = json.loads(file.read_text(encoding="utf-8"))
    file.write_text(json.dumps({**announced, "pid": announced["pid"] + 1}), encoding="utf-8")
    file.chmod(0o600)
    phases: list[str] = []
    answer = await anyio.to_thread.run_sync(
        lambda: hand_off(
            store.paths.state_dir, "oracle.launch", {"proposal_id": "P-x"}, lambda p, _d: phases.append(p)
        )
    )
    assert answer is None and phases == []
    assert "not the announced serve" in capsys.readouterr().err


def test_the_client_reads_the_serves_lines_however_they_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines split across reads, several in one read, a last line with no newline, and a line past
    the limit (cut there, so it is not JSON) all come out as the serve wrote them."""
    from supervisor.cli import _handoff

    class Arrivals:
        """A socket whose reads return these pieces, then the end."""

        def __init__(self, *pieces: bytes):
            self.pieces = list(pieces)

        def recv(self, size: int) -> bytes:
            return self.pieces.pop(0) if self.pieces else b""

    monkeypatch.setattr(_handoff, "_MAX_LINE", 8)
    arrivals = Arrivals(b'{"a"', b":1}\n{}\n[]", b"\n0123456789\n", b"tail")
    lines = list(_handoff._lines(arrivals))  # type: ignore[arg-type]
    assert lines == [b'{"a":1}\n', b"{}\n", b"[]\n", b"01234567", b"89\n", b"tail"]
