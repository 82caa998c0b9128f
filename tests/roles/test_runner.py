"""The role runner: its exit statuses when its channel or grant is missing (over a real socket), its
version, and that roles imports nothing of the supervisor side (the role image carries roles alone)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import anyio
import pytest

from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, serve_launch_socket
from roles import runner
from roles.runner import EXIT_NO_CHANNEL, EXIT_NO_GRANT, EXIT_PROVIDER_FAILED
from store import Store
from store.config import OpenAIProviderConfig
from store.launches import PROVIDER_FAILED_EXIT
from supervisor.models import ModelGateway
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio


async def _runner(*args: str) -> tuple[int, str]:
    code, _, err = await _run_runner(*args)
    return code, err


async def _run_runner(*args: str) -> tuple[int, str, str]:
    result = await anyio.run_process([sys.executable, "-m", "roles.runner", *args], check=False)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


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
        app = LaunchSocketApp(Services(store=store), world.grant_id)
        async with serve_launch_socket(app, socket):
            code, err = await _runner("--socket", str(socket), "--token-file", f"{tmp}/missing")
            assert code == EXIT_NO_GRANT
            assert "no grant" in err
            token_file = Path(tmp) / "token"
            token_file.write_text(other.token)  # a real token, for another launch's grant
            code, err = await _runner("--socket", str(socket), "--token-file", str(token_file))
            assert code == EXIT_NO_GRANT
            assert "refused" in err
            assert other.token not in err


# The role image installs roles alone (docs/image.md): roles may import nothing else of Roundtable.
_IMPORT_ALL_OF_ROLES = """
import importlib, json, pkgutil, sys
import roles
for module in pkgutil.walk_packages(roles.__path__, "roles."):
    importlib.import_module(module.name)
import mcp.client.streamable_http  # what the runner imports lazily, inside a launch
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


async def test_roles_imports_nothing_of_the_supervisor_side() -> None:
    result = await anyio.run_process([sys.executable, "-c", _IMPORT_ALL_OF_ROLES], check=True)
    loaded = set(json.loads(result.stdout))
    assert "roles" in loaded
    assert loaded.isdisjoint({"supervisor", "store", "capabilities", "docker", "requests", "tests"})


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ({"roundtable-role": "1.2.0", "roundtable": "9.9.9"}, "1.2.0"),  # in the role image
        ({"roundtable": "1.3.0"}, "1.3.0"),  # a host install of the whole distribution
        ({}, "0+unknown"),
    ],
)
async def test_role_version_reads_the_distribution_roles_came_in(
    monkeypatch: pytest.MonkeyPatch, installed: dict[str, str], expected: str
) -> None:
    def version(name: str) -> str:
        if name not in installed:
            raise PackageNotFoundError(name)
        return installed[name]

    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert runner.role_version() == expected  # no roundtable_role-*.dist-info beside a checkout


def test_role_version_reads_the_dist_info_directory_without_importlib_metadata(tmp_path: Path) -> None:
    """In the image the version comes from the ``roundtable_role-<version>.dist-info`` directory beside
    ``roles``, as ``importlib.metadata`` would find it, without importing it (a tenth of a second)."""
    site = tmp_path / "site-packages"
    shutil.copytree(
        Path(runner.__file__).parent, site / "roles", ignore=shutil.ignore_patterns("__pycache__")
    )
    (site / "roundtable_role-2.5.1.dist-info").mkdir()
    script = "import sys, roles.runner as r; print(r.role_version(), 'importlib.metadata' in sys.modules)"
    env = {"PYTHONPATH": str(site), "PATH": os.environ.get("PATH", "")}
    done = subprocess.run([sys.executable, "-c", script], cwd=site, env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["2.5.1", "False"], done.stderr


def test_the_runner_knows_every_provider_the_supervisor_can_ask_for() -> None:
    # The two lists live on either side of the image boundary (the image has no store): one test
    # keeps them one list.
    from roles.providers import PROVIDER_NAMES
    from store.config import ProjectConfig, ProviderName

    assert sorted(PROVIDER_NAMES) == sorted(ProviderName)
    assert ProjectConfig().roles.memory_oracle.provider == ProviderName.JUDGE == PROVIDER_NAMES[0]


# -- a provider that fails: exit 4 and one JSON line naming the gateway's reason ------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _openai_run(store: Store, gateway: ModelGateway) -> tuple[int, str, str]:
    world = build_world(store)
    with tempfile.TemporaryDirectory(prefix="rtr-", dir="/tmp") as tmp:
        socket_path = Path(tmp) / "mcp.sock"
        token_file = Path(tmp) / "token"
        token_file.write_text(world.token)
        app = LaunchSocketApp(Services(store=store), world.grant_id, extra_routes=[gateway.route()])
        async with serve_launch_socket(app, socket_path):
            return await _run_runner(
                "--socket", str(socket_path), "--token-file", str(token_file), "--provider", "openai"
            )


def _failure_line(out: str) -> dict[str, str]:
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    body: dict[str, dict[str, str]] = json.loads(lines[0])
    return body["provider_failed"]


async def test_an_unreachable_model_is_a_provider_failure_naming_model_unavailable(store: Store) -> None:
    config = OpenAIProviderConfig(base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    gateway = ModelGateway(config, "L-test")
    code, out, err = await _openai_run(store, gateway)
    assert code == EXIT_PROVIDER_FAILED == PROVIDER_FAILED_EXIT
    failure = _failure_line(out)
    assert (failure["provider"], failure["reason"]) == ("openai", "model_unavailable")
    assert "unreachable" in failure["message"]
    assert "model_unavailable" in err
    assert gateway.failure is not None and gateway.failure.reason == "model_unavailable"


async def test_a_spent_turn_limit_is_a_provider_failure_naming_budget_exhausted(store: Store) -> None:
    import httpx2

    def keep_calling(request: httpx2.Request) -> httpx2.Response:
        call = {"id": "c1", "type": "function", "function": {"name": "task__history", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return httpx2.Response(200, json={"choices": [{"index": 0, "message": message}]})

    config = OpenAIProviderConfig(base_url="http://model.invalid/v1", max_turns=2)
    gateway = ModelGateway(config, "L-test", transport=httpx2.MockTransport(keep_calling))
    code, out, _ = await _openai_run(store, gateway)
    assert code == EXIT_PROVIDER_FAILED
    assert _failure_line(out)["reason"] == "budget_exhausted"
    assert gateway.usage.requests == 2 and gateway.usage.refused == 1
    assert gateway.failure is not None and gateway.failure.reason == "budget_exhausted"
