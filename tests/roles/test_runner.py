"""The role runner's exit statuses when its channel or grant is missing, over a real socket."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from capabilities.services import Services
from capabilities.serving._transports import build_launch_app, serving
from roles.runner import EXIT_NO_CHANNEL, EXIT_NO_GRANT
from store import Store
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio


async def _runner(*args: str) -> tuple[int, str]:
    result = await anyio.run_process([sys.executable, "-m", "roles.runner", *args], check=False)
    return result.returncode, result.stderr.decode()


async def test_no_socket_is_exit_2() -> None:
    with tempfile.TemporaryDirectory(prefix="rtr-") as tmp:
        code, err = await _runner("--socket", f"{tmp}/none.sock", "--token-file", f"{tmp}/token")
    assert code == EXIT_NO_CHANNEL
    assert "no launch channel" in err


async def test_missing_or_refused_token_is_exit_3(store: Store) -> None:
    world = build_world(store)
    other = build_world(store, launch_id="L-other")
    with tempfile.TemporaryDirectory(prefix="rtr-", dir="/tmp") as tmp:
        socket = Path(tmp) / "mcp.sock"
        app = build_launch_app(Services(store=store), world.grant_id)
        async with serving(app, uds=socket):
            code, err = await _runner("--socket", str(socket), "--token-file", f"{tmp}/missing")
            assert code == EXIT_NO_GRANT
            assert "no grant" in err
            token_file = Path(tmp) / "token"
            token_file.write_text(other.token)  # a real token, for another launch's grant
            code, err = await _runner("--socket", str(socket), "--token-file", str(token_file))
            assert code == EXIT_NO_GRANT
            assert "refused" in err
            assert other.token not in err
