"""Two supervisors on two "hosts" share one PostgreSQL store; one is killed mid-launch.

Each host is a network namespace with its own address (:mod:`tests.supervisor.multihost._netns`)
and its own project checkout, both configured with the same ``[store] schema``; each runs a real
supervisor process (:mod:`tests.supervisor.multihost.host_worker`) with a 3 s lease. Host A starts
a launch whose container hangs and keeps writing (idempotent memory creates, votes); host B starts
one too. Then A is SIGKILLed. The test checks, against the store and the Docker engine:

- A's launch stays active until A's lease expires on the database clock, then B fails it
  (``owner_lease_expired``), revokes its grant and removes its container (same engine);
- B's own launch is never touched, and ends ``cancelled`` when B stops cleanly (lease released);
- no launch ran twice (one ``role.started`` each, one launch per proposal);
- every write A acknowledged is there; replaying A's idempotency keys on B applies none twice;
- both hosts talked to the store from their own addresses.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import psycopg
import pytest

from store import ProjectPaths, Store, init_project, list_events, open_store
from store.db import ENV_STORE_URL
from store.launches import LEASE_EXPIRED, LaunchStatus, LeaseStore
from tests.e2e.conftest import write_config
from tests.supervisor.multihost._netns import Forwarder, Host, create_host, delete_host

REPO_ROOT = Path(__file__).resolve().parents[3]
TTL = 3
WAIT = 60.0

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2's `ip` for network namespaces"),
    pytest.mark.skipif(os.geteuid() != 0, reason="creating network namespaces needs root"),
]


class Worker:
    """A host_worker process in a namespace: send it commands, read its JSON lines."""

    def __init__(self, host: Host, root: Path, url: str):
        env = {**os.environ, ENV_STORE_URL: url, "PYTHONPATH": str(REPO_ROOT)}
        self.log = root.parent / f"{root.name}.log"  # a file: a full stderr pipe would stall it
        self._log_file = self.log.open("w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace, sys.executable, "-m",
             "tests.supervisor.multihost.host_worker", str(root)],
            cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_file,
            text=True,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stdout: IO[str] | None) -> None:
        assert stdout is not None
        for line in stdout:
            self._queue.put(line)
        self._queue.put("")  # the end

    def send(self, **command: Any) -> None:
        """One command line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def until(self, key: str, value: Any = None) -> dict[str, Any]:
        """Read lines until one has ``key`` (equal to ``value`` when given); returns it."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {key!r} from the worker in {WAIT:g}s") from None
            if not line:
                self.proc.wait(timeout=30)
                raise AssertionError(f"the worker ended before {key!r}: {self.log.read_text()[-3000:]}")
            message: dict[str, Any] = json.loads(line)
            self.lines.append(message)
            if key in message and (value is None or message[key] == value):
                return message

    def stop(self) -> None:
        """Kill it if it still runs, and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout, self._log_file):
            if stream is not None:
                stream.close()


@pytest.fixture
def hosts() -> Iterator[tuple[Host, Host]]:
    """Two namespaces, deleted whatever happens."""
    made: list[Host] = []
    try:
        made.append(create_host("a"))
        made.append(create_host("b"))
        yield made[0], made[1]
    finally:
        for host in made:
            delete_host(host)


@pytest.fixture
def shared_schema(pg_url: str) -> Iterator[str]:
    """A schema of its own on the test server, dropped afterwards."""
    name = f"rt_two_hosts_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    try:
        yield name
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _checkout(root: Path, schema: str) -> ProjectPaths:
    paths, _ = init_project(root)
    write_config(
        paths,
        {
            "[store]schema": f'"{schema}"',
            "[supervisor]lease_ttl_seconds": str(TTL),
            "[supervisor]warm_pool": "0",
        },
    )
    return paths


def _wait(what: str, check: Any) -> Any:
    """Poll ``check`` (a store or engine read) until it answers something truthy."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if result := check():
            return result
    raise AssertionError(f"timed out waiting for {what}")


def _events(store: Store, launch_id: str, kind: str) -> list[Any]:
    found = store.db.read(lambda conn: list_events(conn, types=(kind,), limit=10_000))
    return [event for event in found if event.payload.get("launch_id") == launch_id]


def _check_reaped(store: Store, docker_sdk: Any, launch_id: str, expires_at: float) -> None:
    """Failed by the reaper after the lease's expiry, exactly once; grant revoked; container gone."""
    assert _wait("A's launch to be reaped", lambda: not store.launches.get(launch_id).active)
    failed = store.launches.get(launch_id)
    assert (failed.status, failed.reason) == (LaunchStatus.FAILED, LEASE_EXPIRED)
    failure = _events(store, launch_id, "role.failed")
    assert len(failure) == 1
    assert failure[0].created_at >= _iso(expires_at), "reaped before the lease expired"
    sql = "SELECT revoked_at, revoked_reason FROM capability_grants WHERE launch_id = ?"
    grants = store.db.read(lambda conn: conn.execute(sql, (launch_id,)).fetchall())
    assert grants
    assert all(g["revoked_at"] and g["revoked_reason"] == LEASE_EXPIRED for g in grants)
    label = {"label": f"roundtable.launch={launch_id}"}
    # The low-level list: the high-level one inspects each container and fails on one being removed.
    _wait("A's container to be removed", lambda: not docker_sdk.api.containers(all=True, filters=label))


def _check_writes(store: Store, a: Worker, b: Worker, proposal_id: str) -> None:
    """Every vote A acknowledged is there; B replaying A's keys applies none a second time."""
    acked = [m for m in a.lines if "ack" in m]
    sent = [m["sending"] for m in a.lines if "sending" in m]
    votes = {v.id for v in store.reviews.list(proposal_id=proposal_id)[0]}
    assert {m["id"] for m in acked if m["ack"] == "vote"} <= votes, "an acknowledged vote was lost"
    b.send(do="replay", keys=sent, prefix="a")
    b.until("done", "replay")
    replays = {m["key"]: m for m in b.lines if "replayed" in m}
    for ack in (m for m in acked if m["ack"] == "idem"):
        assert replays[ack["key"]] == {"replayed": True, "key": ack["key"], "memory_id": ack["memory_id"]}
    sql = "SELECT title FROM memory_entries"
    titles = store.db.read(lambda conn: [r[0] for r in conn.execute(sql).fetchall()])
    applied = {key: titles.count(f"idempotent {key}") for key in sent}
    assert set(applied.values()) == {1}, applied


def test_a_killed_supervisors_launches_are_reaped_by_the_other_after_its_lease_expires(
    hosts: tuple[Host, Host],
    shared_schema: str,
    pg_url: str,
    tmp_path: Path,
    docker_sdk: Any,
    role_image_tag: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host_a, host_b = hosts
    url = urlsplit(pg_url)
    assert url.hostname is not None and url.port is not None
    forwarder = Forwarder((url.hostname, url.port))
    workers: list[Worker] = []
    proposals: list[str] = []
    try:
        urls = {}
        for host in hosts:
            port = forwarder.listen(host.gateway)
            urls[host.namespace] = pg_url.replace(f"@{url.hostname}:{url.port}/", f"@{host.gateway}:{port}/")
        root_a = _checkout(tmp_path / "host-a", shared_schema)
        root_b = _checkout(tmp_path / "host-b", shared_schema)
        monkeypatch.setenv(ENV_STORE_URL, pg_url)
        store = open_store(root_a)  # the test's own view, from the root namespace
        try:
            a = Worker(host_a, root_a.root, urls[host_a.namespace])
            workers.append(a)
            b = Worker(host_b, root_b.root, urls[host_b.namespace])
            workers.append(b)
            ready_a, ready_b = a.until("ready"), b.until("ready")
            assert ready_a["engine"] == ready_b["engine"] == docker_sdk.info()["ID"]

            a.send(do="scene")
            proposal_a = a.until("scene")["scene"]
            b.send(do="scene")
            proposal_b = b.until("scene")["scene"]
            proposals += [proposal_a, proposal_b]
            b.send(do="launch", proposal=proposal_b)
            launch_b = b.until("phase", "running")["launch_id"]
            a.send(do="launch", proposal=proposal_a)
            launch_a = a.until("phase", "running")["launch_id"]
            a.send(do="writes", proposal=proposal_a, count=10, prefix="a")
            a.until("done", "writes")
            a.send(do="writes", proposal=proposal_a, count=1000, prefix="a2")
            a.until("ack", "vote")  # the kill lands in the middle of this workload

            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(timeout=30)
            killed_at = time.time()
            leases = LeaseStore(store.launches)
            lease_a = next(lease for lease in leases.leases() if lease.owner == ready_a["ready"])
            assert store.launches.get(launch_a).active, "reaped before the lease expired"

            _check_reaped(store, docker_sdk, launch_a, lease_a.expires_at)
            # B's launch was never touched: still running.
            assert store.launches.get(launch_b).status is LaunchStatus.RUNNING
            for launch_id, proposal_id in ((launch_a, proposal_a), (launch_b, proposal_b)):
                assert len(_events(store, launch_id, "role.started")) == 1  # no launch ran twice
                assert [x.id for x in store.launches.find(proposal_id=proposal_id)] == [launch_id]
            _check_writes(store, a, b, proposal_a)

            b.send(do="stop")
            b.until("stopped")
            assert b.proc.wait(timeout=30) == 0
            assert store.launches.get(launch_b).status is LaunchStatus.CANCELLED
            assert [lease.owner for lease in leases.leases()] == []  # B released, A's was reaped
            assert {host_a.address, host_b.address} <= set(forwarder.peers)
            assert time.time() - killed_at < WAIT
        finally:
            store.close()
    finally:
        for worker in workers:
            worker.stop()
        forwarder.close()
        for proposal_id in proposals:  # what a failure left behind
            label = {"label": f"roundtable.proposal={proposal_id}"}
            for container in docker_sdk.api.containers(all=True, filters=label):
                docker_sdk.api.remove_container(container["Id"], force=True)


def _iso(epoch: float) -> str:
    """An epoch time as the events' ``created_at`` spells it."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
