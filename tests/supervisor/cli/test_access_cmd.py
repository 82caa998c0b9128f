"""``roundtable token``, ``roundtable capability`` and ``roundtable serve`` from the command line."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from capabilities.serving._transports import BoundAddress
from store import ProjectPaths, open_store
from store.access._grants import GrantRecord, TokenRecord
from tests.capabilities.http_helpers import insert_proposal, mcp_client


def run(argv: list[str], project: ProjectPaths, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [*argv, "--json", "--root", str(project.root), *args], capture_output=True, text=True, timeout=60
    )
    return done.returncode, json.loads(done.stdout)


def test_token_create_list_revoke(roundtable_argv: list[str], project: ProjectPaths) -> None:
    code, created = run(roundtable_argv, project, "token", "create", "--name", "alice")
    assert code == 0
    token = created["token"]
    store = open_store(project)
    try:
        record = store.grants.authenticate(token)
        assert isinstance(record, TokenRecord) and record.name == "alice"
        code, listed = run(roundtable_argv, project, "token", "list")
        assert code == 0 and token not in json.dumps(listed)
        assert [item["name"] for item in listed["tokens"]] == ["alice"]
        code, revoked = run(roundtable_argv, project, "token", "revoke", created["token_id"])
        assert code == 0 and revoked["revoked"] is True
    finally:
        store.close()
    code, error = run(roundtable_argv, project, "token", "create", "--name", "bad name")
    assert code == 1 and error["error"]["code"] == "invalid_argument"


def test_capability_grant_and_revoke(roundtable_argv: list[str], project: ProjectPaths) -> None:
    store = open_store(project)
    try:
        task_id, proposal_id = insert_proposal(store)
        code, granted = run(
            roundtable_argv,
            project,
            "capability",
            "grant",
            "--proposal",
            proposal_id,
            "--role",
            "memory_oracle",
        )
        assert code == 0
        assert {"grant_id", "token", "expires_at", "tools", "scopes"} <= set(granted)
        assert granted["scopes"] == sorted({task_id, "project"})
        assert set(granted["tools"]) == {
            "task.history",
            "patch.inspect",
            "memory.query",
            "memory.record",
            "memory.summarize",
            "oracle.warn",
        }
        record = store.grants.authenticate(granted["token"])
        assert isinstance(record, GrantRecord) and record.id == granted["grant_id"]
        code, revoked = run(roundtable_argv, project, "capability", "revoke", granted["grant_id"])
        assert code == 0 and revoked["revoked"] is True and revoked["grant"]["revoked_at"]
        code, again = run(roundtable_argv, project, "capability", "revoke", granted["grant_id"])
        assert code == 0 and again["revoked"] is False
    finally:
        store.close()
    code, error = run(
        roundtable_argv, project, "capability", "grant", "--proposal", "P-nope", "--role", "memory_oracle"
    )
    assert code == 1 and error["error"]["code"] == "not_found"
    code, error = run(roundtable_argv, project, "capability", "revoke", "C-nope")
    assert code == 1 and error["error"]["code"] == "not_found"


def test_serve_refuses_a_remote_bind_without_allow_remote(
    roundtable_argv: list[str], project: ProjectPaths
) -> None:
    code, error = run(roundtable_argv, project, "serve", "--host", "0.0.0.0")  # noqa: S104
    assert code == 1
    assert error["error"]["code"] == "invalid_argument"
    assert "--allow-remote" in error["error"]["message"]


@pytest.mark.anyio
async def test_serve_on_a_unix_socket_until_sigterm(
    roundtable_argv: list[str], project: ProjectPaths, tmp_path: Path
) -> None:
    store = open_store(project)
    issued = store.grants.mint_token(name="alice", actor="operator")
    store.close()
    sock = tmp_path / "serve.sock"
    argv = [*roundtable_argv, "--json", "--root", str(project.root), "serve", "--uds", str(sock)]
    with anyio.fail_after(60):
        async with await anyio.open_process(argv) as process:
            assert process.stderr is not None and process.stdout is not None
            # Wait for the readiness line itself, not for a guessed delay.
            ready: dict[str, Any] = {}
            async for chunk in TextReceiveStream(process.stderr):
                for line in chunk.splitlines():
                    if '"serve.ready"' in line:
                        ready = json.loads(line)
                if ready:
                    break
            assert ready["mcp"] == "http://localhost/mcp"
            async with mcp_client(BoundAddress(uds=str(sock)), issued.token) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "memory.query" in names and "oracle.warn" not in names
            process.send_signal(signal.SIGTERM)
            out = b"".join([chunk async for chunk in process.stdout])
            assert await process.wait() == 0
    assert json.loads(out)["stopped"] is True
    assert not sock.exists()
