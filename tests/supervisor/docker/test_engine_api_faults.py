"""The lean Engine API backend against a scripted engine on a real Unix socket: error answers,
dropped connections and stalls are retried and translated exactly as for the SDK backend.

:class:`_ScriptedEngine` is a tiny HTTP server on an ``AF_UNIX`` socket. Each request takes the next
scripted answer for its ``METHOD /path`` (an answer, :data:`DROP` to close the connection unanswered,
or :data:`STALL` to never answer); unscripted requests get a plain success.
"""

from __future__ import annotations

import collections
import gc
import json
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import pytest

from store import DockerUnavailable, LaunchFailed
from supervisor.docker._client import DockerClient
from supervisor.docker._engine_api import EngineApiBackend
from tests.supervisor.conftest import FAST_RETRY

DROP = "drop"
STALL = "stall"
Answer = tuple[int, Any] | str
CID = "c" * 64


class _ScriptedEngine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str):
        self.script: dict[str, collections.deque[Answer]] = collections.defaultdict(collections.deque)
        self.requests: list[str] = []
        self.bodies: list[Any] = []
        self.release = threading.Event()
        super().__init__(path, _Handler)

    def answer(self, request: str, *answers: Answer) -> None:
        self.script[request].extend(answers)

    def count(self, request: str) -> int:
        return self.requests.count(request)


_DEFAULTS: dict[str, tuple[int, Any]] = {
    "GET /version": (200, {"ApiVersion": "1.41"}),
    "GET /_ping": (200, "OK"),
    "POST /containers/create": (201, {"Id": CID, "Warnings": []}),
    "POST /containers/wait": (200, {"StatusCode": 7}),
    "GET /containers/json": (200, {"Id": CID, "Config": {"Labels": {"k": "v"}}, "Name": "/x"}),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ScriptedEngine

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _serve(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1.41/"):
            path = path[len("/v1.41") :]
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "containers" and parts[2] not in ("create", "json"):
            path = f"/containers/{parts[3]}"  # /containers/ID/start -> /containers/start
        elif len(parts) == 3 and parts[1] == "containers" and parts[2] not in ("create", "json"):
            path = "/containers/json" if self.command == "GET" else "/containers"
        request = f"{self.command} {path}"
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append(request)
        self.server.bodies.append(json.loads(body) if body else None)
        queue = self.server.script[request]
        answer: Answer = queue.popleft() if queue else _DEFAULTS.get(request, (204, None))
        if answer == DROP:
            self.close_connection = True
            return
        if answer == STALL:
            self.server.release.wait()
            self.close_connection = True
            return
        assert isinstance(answer, tuple)
        status, document = answer
        data = b"" if document is None else (document if isinstance(document, str) else json.dumps(document))
        payload = data.encode() if isinstance(data, str) else data
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _serve  # noqa: N815 (http.server's names)


@pytest.fixture
def engine() -> Iterator[_ScriptedEngine]:
    with tempfile.TemporaryDirectory(prefix="rt-eng-", dir="/tmp") as tmp:
        server = _ScriptedEngine(str(Path(tmp) / "docker.sock"))
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.release.set()
            server.shutdown()
            server.server_close()
            thread.join()


def _client(engine: _ScriptedEngine, timeout: float = 5.0) -> DockerClient:
    return DockerClient(
        lambda: EngineApiBackend(str(engine.server_address), timeout=timeout), retry=FAST_RETRY
    )


def _run(client: DockerClient, call: Any) -> Any:
    async def main() -> Any:
        try:
            return await call(client)
        finally:
            await client.aclose()

    return anyio.run(main)


def test_the_api_version_is_asked_once_and_pinned(engine: _ScriptedEngine) -> None:
    _run(_client(engine), lambda c: c.ping())
    _run(_client(engine), lambda c: c.start(CID))
    assert engine.count("GET /version") == 2 and engine.count("GET /_ping") == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_answers_are_retried_then_launch_failed(engine: _ScriptedEngine, status: int) -> None:
    engine.answer("POST /containers/start", *[(status, {"message": "engine hiccup"})] * 3)
    with pytest.raises(LaunchFailed) as failed:
        _run(_client(engine), lambda c: c.start(CID))
    assert engine.count("POST /containers/start") == 3
    assert failed.value.details["status"] == status and "engine hiccup" in failed.value.message


def test_a_transient_5xx_is_cured_by_a_retry(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/start", (503, {"message": "busy"}))
    _run(_client(engine), lambda c: c.start(CID))
    assert engine.count("POST /containers/start") == 2


@pytest.mark.parametrize("status", [400, 403, 404, 409])
def test_4xx_answers_are_not_retried(engine: _ScriptedEngine, status: int) -> None:
    engine.answer("POST /containers/start", (status, {"message": "no"}))
    with pytest.raises(LaunchFailed) as failed:
        _run(_client(engine), lambda c: c.start(CID))
    assert engine.count("POST /containers/start") == 1 and failed.value.details["status"] == status


def test_a_missing_image_is_named(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/create", (404, {"message": "No such image: nope:1"}))
    with pytest.raises(LaunchFailed, match="image not found"):
        _run(_client(engine), lambda c: c.create({"image": "nope:1", "name": "n"}))
    assert engine.count("POST /containers/create") == 1


def test_a_409_by_name_adopts_the_container_with_our_labels(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/create", (409, {"message": "Conflict. The name is in use"}))
    kwargs = {"image": "i", "name": "x", "labels": {"k": "v"}, "cap_drop": ["ALL"], "read_only": True}
    assert _run(_client(engine), lambda c: c.create(kwargs)) == CID
    body = engine.bodies[engine.requests.index("POST /containers/create")]
    assert body["HostConfig"]["CapDrop"] == ["ALL"] and body["HostConfig"]["ReadonlyRootfs"] is True
    assert body["Labels"] == {"k": "v"}


def test_a_409_for_someone_elses_container_is_not_adopted(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/create", (409, {"message": "Conflict"}))
    with pytest.raises(LaunchFailed):
        _run(_client(engine), lambda c: c.create({"image": "i", "name": "x", "labels": {"k": "other"}}))


def test_gone_and_not_running_are_fine_for_kill_and_remove(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/kill", (404, {"message": "No such container"}))
    engine.answer("POST /containers/kill", (409, {"message": "is not running"}))
    engine.answer("DELETE /containers", (404, {"message": "No such container"}))

    async def calls(client: DockerClient) -> bool:
        await client.kill(CID)
        await client.kill(CID)
        return await client.remove(CID)

    assert _run(_client(engine), calls) is False


def test_a_dropped_connection_is_retried(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/start", DROP, DROP)
    _run(_client(engine), lambda c: c.start(CID))
    assert engine.count("POST /containers/start") == 3


def test_connections_dropped_every_time_end_as_docker_unavailable(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/start", DROP, DROP, DROP)
    with pytest.raises(DockerUnavailable, match="cannot reach the Docker engine"):
        _run(_client(engine), lambda c: c.start(CID))


def test_a_stalled_engine_times_out_and_is_retried(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/start", STALL, STALL, STALL)
    with pytest.raises(DockerUnavailable):
        _run(_client(engine, timeout=0.2), lambda c: c.start(CID))
    assert engine.count("POST /containers/start") == 3


def test_a_stalled_wait_is_a_timeout_not_an_error(engine: _ScriptedEngine) -> None:
    engine.answer("POST /containers/wait", STALL)
    assert _run(_client(engine), lambda c: c.wait(CID, 0.2)) is None
    assert _run(_client(engine), lambda c: c.wait(CID, 5)) == 7


def test_a_missing_socket_is_docker_unavailable(tmp_path: Path) -> None:
    client = DockerClient(lambda: EngineApiBackend(str(tmp_path / "none.sock")), retry=FAST_RETRY)
    with pytest.raises(DockerUnavailable, match="is it running"):
        _run(client, lambda c: c.ping())
    gc.collect()  # a socket left open by the failed connect would warn here (warnings are errors)


def test_keep_alive_connections_are_reused_and_replaced_when_dropped(engine: _ScriptedEngine) -> None:
    backend = EngineApiBackend(str(engine.server_address))
    try:
        for _ in range(3):
            backend.ping()
        assert len(backend._idle) == 1  # one connection served all four calls
        engine.release.set()
        engine.answer("GET /_ping", DROP)
        with pytest.raises(ConnectionError):
            backend.ping()  # dropped mid-call: an error, the connection discarded
        assert backend._idle == []
        backend.ping()
    finally:
        backend.close()
    assert backend._idle == [] and backend._busy == set()
