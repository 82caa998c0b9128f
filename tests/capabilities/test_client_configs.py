"""The client configurations of docs/clients.md, each started as the page says.

Every snippet (a ``claude mcp add`` command line, a Codex TOML table, a Cursor, VS Code or Claude
Desktop JSON entry) is read from the page and parsed as its client would read it: the server's
command line for stdio, or the URL and headers for streamable HTTP. The test then starts that
server for real (``roundtable mcp stdio`` as a subprocess; ``roundtable serve`` as a subprocess,
started and given a token with the commands the page shows) and lists its tools with a real MCP
client, checking the spelling the page promises and that the listed name can be called.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from store import ProjectPaths
from tests.conftest import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "clients.md"
SNIPPET = re.compile(r"<!-- snippet: (\S+) (stdio|http) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)
PROJECT = "/path/to/project"
CLIENTS = {"claude-code", "codex", "cursor", "vscode", "claude-desktop"}
TOKEN_VAR = "ROUNDTABLE_TOKEN"

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Server:
    """What a client configuration starts or connects to."""

    argv: list[str] = field(default_factory=list)  # stdio: the command line
    url: str | None = None  # http
    headers: dict[str, str] = field(default_factory=dict)


def snippets() -> dict[tuple[str, str], tuple[str, str]]:
    """``{(client, transport): (language, text)}`` for every tested snippet of the page."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for client, transport, language, text in SNIPPET.findall(PAGE.read_text(encoding="utf-8")):
        assert (client, transport) not in found, (client, transport)
        found[(client, transport)] = (language, text)
    return found


def _expand(value: str, token: str, inputs: dict[str, str]) -> str:
    """Substitute what each client substitutes: env variables and VS Code inputs."""
    value = value.replace("${env:" + TOKEN_VAR + "}", token).replace("$" + TOKEN_VAR, token)
    return re.sub(r"\$\{input:([\w-]+)\}", lambda m: inputs[m.group(1)], value)


def _claude_code(text: str, token: str) -> Server:
    words = shlex.split(text.replace("$" + TOKEN_VAR, token))
    assert words[:3] == ["claude", "mcp", "add"], words
    if "--" in words:
        cut = words.index("--")
        assert words[3:cut] == ["roundtable"], words
        return Server(argv=words[cut + 1 :])
    options: dict[str, list[str]] = {}
    positional: list[str] = []
    rest = iter(words[3:])
    for word in rest:
        if word.startswith("--"):
            options.setdefault(word, []).append(next(rest))
        else:
            positional.append(word)
    assert options["--transport"] == ["http"] and positional[0] == "roundtable", words
    headers = dict(h.split(": ", 1) for h in options.get("--header", []))
    return Server(url=positional[1], headers=headers)


def _codex(text: str, token: str) -> Server:
    entry = tomllib.loads(text)["mcp_servers"]["roundtable"]
    if "command" in entry:
        return Server(argv=[entry["command"], *entry["args"]])
    assert entry["bearer_token_env_var"] == TOKEN_VAR
    return Server(url=entry["url"], headers={"Authorization": f"Bearer {token}"})


def _json_entry(client: str, text: str, token: str) -> Server:
    data = json.loads(text)
    key = "servers" if client == "vscode" else "mcpServers"
    entry = data[key]["roundtable"]
    inputs = {item["id"]: token for item in data.get("inputs", []) if item.get("password")}
    if "command" in entry:
        assert entry.get("type", "stdio") == "stdio"
        return Server(argv=[entry["command"], *entry["args"]])
    if client == "vscode":
        assert entry["type"] == "http"
    headers = {name: _expand(value, token, inputs) for name, value in entry["headers"].items()}
    return Server(url=entry["url"], headers=headers)


def parse(client: str, language: str, text: str, token: str) -> Server:
    """The server a snippet describes, as its client reads it."""
    if client == "claude-code":
        assert language == "sh"
        return _claude_code(text, token)
    if client == "codex":
        assert language == "toml"
        return _codex(text, token)
    assert language == "json"
    return _json_entry(client, text, token)


def _page_commands() -> list[list[str]]:
    """The ``roundtable ...`` command lines of the page's first shell block (token, serve)."""
    block = re.search(r"```sh\n(.*?)\n\s*```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    assert block is not None
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("roundtable ")]


def _roundtable(argv: list[str], roundtable_argv: list[str], project: ProjectPaths) -> list[str]:
    """A documented ``roundtable ...`` command line run with this tree's interpreter on ``project``."""
    assert Path(argv[0]).name == "roundtable", argv
    args = [str(project.root) if arg == PROJECT else arg for arg in argv[1:]]
    return [*roundtable_argv, *args]


def mint_token(roundtable_argv: list[str], project: ProjectPaths) -> str:
    """Run the page's ``roundtable token create`` and return the token it printed."""
    (create,) = [argv for argv in _page_commands() if argv[1:3] == ["token", "create"]]
    argv = [*_roundtable(create, roundtable_argv, project), "--json", "--root", str(project.root)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    token: str = json.loads(done.stdout)["token"]
    return token


@asynccontextmanager
async def served(roundtable_argv: list[str], project: ProjectPaths) -> AsyncIterator[int]:
    """The page's ``roundtable serve`` running (on a free port); yields the port."""
    (serve,) = [argv for argv in _page_commands() if argv[1:2] == ["serve"]]
    where = ["--json", "--root", str(project.root), "--port", "0"]
    argv = [*_roundtable(serve, roundtable_argv, project), *where]
    async with await anyio.open_process(argv) as process:
        assert process.stderr is not None
        ready: dict[str, Any] = {}
        async for chunk in TextReceiveStream(process.stderr):
            for line in chunk.splitlines():
                if '"serve.ready"' in line:
                    ready = json.loads(line)
            if ready:
                break
        try:
            yield int(ready["url"].rsplit(":", 1)[1])
        finally:
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0


@asynccontextmanager
async def connect(server: Server, roundtable_argv: list[str], project: ProjectPaths) -> AsyncIterator[Client]:
    """A real MCP client on the server a snippet describes (stdio: started here)."""
    if server.url is None:
        argv = _roundtable(server.argv, roundtable_argv, project)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        async with Client(params) as client:
            yield client
        return
    async with (
        httpx2.AsyncClient(headers=server.headers, timeout=30) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


def test_the_page_configures_every_client_both_ways() -> None:
    found = set(snippets())
    expected = {(client, transport) for client in CLIENTS for transport in ("stdio", "http")}
    # Claude Desktop's configuration file starts local servers only (the page says why).
    assert found == expected - {("claude-desktop", "http")}


@pytest.mark.parametrize(("client", "transport"), sorted(snippets()))
async def test_each_snippet_starts_a_server_listing_underscore_names(
    client: str, transport: str, roundtable_argv: list[str], project: ProjectPaths
) -> None:
    language, text = snippets()[(client, transport)]
    token = mint_token(roundtable_argv, project)
    server = parse(client, language, text, token)
    with anyio.fail_after(90):
        if transport == "stdio":
            assert server.argv[1:3] == ["mcp", "stdio"] and "--tool-names" in server.argv
            names, answer = await _session(server, roundtable_argv, project)
        else:
            assert server.url == "http://127.0.0.1:8765/mcp"
            assert server.headers == {"Authorization": f"Bearer {token}"}
            async with served(roundtable_argv, project) as port:
                local = Server(url=server.url.replace(":8765/", f":{port}/"), headers=server.headers)
                names, answer = await _session(local, roundtable_argv, project)
    # Every name is a valid model function name, and the agent's toolset (an Implementer's) is
    # what is served, whichever way it connected.
    assert names and all(re.fullmatch(r"[a-zA-Z0-9_-]+", name) for name in names), names
    assert {"memory_query", "proposal_create", "proposal_timeline"} <= names
    assert "vote_cast" not in names and "decision_record" not in names
    assert answer == {"entries": []}


async def _session(server: Server, roundtable_argv: list[str], project: ProjectPaths) -> tuple[set[str], Any]:
    async with connect(server, roundtable_argv, project) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("memory_query", {"query": "nothing recorded yet"})
    assert not result.is_error, result.structured_content
    return names, result.structured_content
