"""Hostile input: every MCP tool for both principals, the diff parser, and every HTTP route.

SECURITY "The tests that prove it" 18. Answers are structured errors or results; never ``internal``,
a traceback or a 5xx; and a refused call changes nothing (``project_snapshot`` before and after).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities.mcp._dispatch import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.principals import Principal, local_operator
from capabilities.services import Services
from store import InvalidArgument, Store
from store.patches._diffs import check_repo_path, decode_patch, parse_diff
from tests.capabilities.oracle_helpers import OracleWorld, build_world
from tests.helpers import project_snapshot
from tests.reliability.hostile import JUNK, junk_value, value_for
from tests.reliability.summary import Summary, scaled

_REGISTRY = build_registry()
_EXAMPLES = 20


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


@pytest.fixture
def world(store: Store) -> OracleWorld:
    return build_world(store)


def _known(world: OracleWorld) -> list[str]:
    return [
        world.task_id,
        world.proposal_id,
        world.foreign_task_id,
        world.foreign_proposal_id,
        world.task_memory,
        world.project_memory,
        world.foreign_memory,
        "project",
        "decision",
    ]


def _arguments(tool: str, world: OracleWorld) -> st.SearchStrategy[Any]:
    schema = _REGISTRY.get(tool)
    assert schema is not None
    props: dict[str, Any] = schema.input_schema().get("properties", {})
    known = _known(world)
    shaped = st.fixed_dictionaries(
        {}, optional={name: value_for(prop, known) for name, prop in props.items()}
    )
    extra = st.dictionaries(st.text(max_size=12), JUNK, min_size=1, max_size=3)
    return st.one_of(shaped, shaped, st.builds(lambda a, b: {**a, **b}, shaped, extra), JUNK)


@pytest.mark.parametrize("as_oracle", [False, True], ids=["operator", "oracle"])
@pytest.mark.parametrize("tool", _REGISTRY.names())
def test_every_tool_answers_junk_with_a_structured_error_and_no_change(
    tool: str,
    as_oracle: bool,
    store: Store,
    world: OracleWorld,
    portal: anyio.from_thread.BlockingPortal,
    reliability: Summary,
) -> None:
    principal: Principal = world.principal if as_oracle else local_operator()
    services = Services(store=store)

    @settings(max_examples=scaled(_EXAMPLES), deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments=_arguments(tool, world))
    def check(arguments: Any) -> None:
        before = project_snapshot(store.paths)
        outcome = portal.call(call_tool, services, _REGISTRY, principal, tool, arguments)
        reliability.fuzz[f"mcp {tool} ({principal.role})"] += 1
        text = json.dumps(outcome.body(), default=str)
        assert "Traceback" not in text
        if outcome.error is not None:
            if outcome.error.code == "internal":
                reliability.server_errors += 1
            assert outcome.error.code != "internal", (tool, arguments, outcome.error.to_dict())
            assert project_snapshot(store.paths) == before, (tool, arguments, outcome.error.to_dict())

    check()


# -- the diff parser ---------------------------------------------------------------------------------

_PATHS = st.one_of(
    st.sampled_from(
        [
            "../evil",
            "a/../../b",
            "/etc/passwd",
            ".git/config",
            ".roundtable/db",
            "a//b",
            "./a",
            "a\\b",
            "ok.txt",
            "dir/ok.py",
            "\x01ctl",
            "a\tb",
            '"quoted\\nname"',
            "x" * 5000,
        ]
    ),
    st.text(min_size=1, max_size=20),
)
_MODES = st.sampled_from(["100644", "100755", "120000", "160000", "020000", "060000", "040000", "777", "abc"])


@st.composite
def _hostile_diff(draw: st.DrawFn) -> str:
    sections = []
    for _ in range(draw(st.integers(1, 3))):
        old, new = draw(_PATHS), draw(_PATHS)
        header = f"diff --git a/{old} b/{new}\n"
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["new file mode", "old mode", "new mode", "deleted file mode"]))
            header += f"{kind} {draw(_MODES)}\n"
        if draw(st.booleans()):
            header += draw(
                st.sampled_from(["GIT binary patch\n", "copy from a\ncopy to b\n", "rename from a\n"])
            )
        lines = draw(st.integers(0, 3000 if draw(st.booleans()) else 5))
        count = lines + draw(st.sampled_from([0, 0, 1, -1]))
        body = "".join(draw(st.sampled_from(["+", "-", " "])) + "l\n" for _ in range(min(lines, 50))) * max(
            1, lines // 50
        )
        start = draw(st.sampled_from(["0", "1", "-1", "99999999999999999999"]))
        hunk = f"@@ -{start},{count} +1,{count} @@\n{body}"
        sections.append(f"{header}--- a/{old}\n+++ b/{new}\n{hunk}")
    return "".join(sections) + draw(st.sampled_from(["", "\x00", "\ud800", "\r\n", "trailing junk\n"]))


@settings(max_examples=scaled(300), deadline=None)
@given(text=st.one_of(_hostile_diff(), st.text(max_size=200)), raw=st.binary(max_size=200))
def test_the_diff_parser_refuses_hostile_patches_cleanly(text: str, raw: bytes) -> None:
    from tests.reliability.summary import SUMMARY

    SUMMARY.fuzz["diff parser"] += 2
    for attempt in (
        lambda: parse_diff(text, max_bytes=1 << 20),
        lambda: decode_patch(raw, max_bytes=1 << 20),
    ):
        try:
            parsed = attempt()
        except InvalidArgument:
            continue
        if hasattr(parsed, "touched_files"):
            for path in parsed.touched_files():  # anything accepted is a canonical in-tree path
                assert check_repo_path(path) == path
                assert not path.startswith("/") and ".." not in path.split("/")


def test_patches_with_hostile_entries_are_refused_through_the_tool_with_no_change(
    store: Store, portal: anyio.from_thread.BlockingPortal, reliability: Summary
) -> None:
    task = store.tasks.create(title="t", actor="op")
    hostile = {
        "traversal": "diff --git a/../x b/../x\n--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n",
        "absolute": "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        "symlink": "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n",
        "device": "diff --git a/d b/d\nnew file mode 020000\n--- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+x\n",
        "gitlink": "diff --git a/m b/m\nnew file mode 160000\n--- /dev/null\n+++ b/m\n@@ -0,0 +1 @@\n+x\n",
        "huge_hunk": "--- a/f\n+++ b/f\n@@ -1 +1,2000000 @@\n-a\n" + "+b\n" * 400_000,
        "short_hunk": "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n-a\n+b\n",
        "invalid_utf8": "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+\udcff\n",
        "nul": "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+\x00\n",
        "into_state": "--- a/.roundtable/x.db\n+++ b/.roundtable/x.db\n@@ -1 +1 @@\n-a\n+b\n",
    }
    services = Services(store=store)
    for name, patch in hostile.items():
        before = project_snapshot(store.paths)
        outcome = portal.call(
            call_tool,
            services,
            _REGISTRY,
            local_operator(),
            "proposal.create",
            {"task_id": task.id, "agent_id": "implementer-1", "title": name, "patch": patch},
        )
        reliability.fuzz["mcp proposal.create (hostile patches)"] += 1
        assert outcome.error is not None, name
        assert outcome.error.code == "invalid_argument", (name, outcome.error.to_dict())
        assert project_snapshot(store.paths) == before, name


# -- every HTTP route ----------------------------------------------------------------------------------

_SKIPPED_ROUTES = {"/events/stream"}  # an endless stream; its parameters are the ones of /events


@pytest.mark.anyio
async def test_every_http_route_answers_junk_with_a_structured_error_and_no_change(
    services: Services, store: Store, reliability: Summary
) -> None:
    from capabilities.http_api import openapi_document
    from tests.capabilities.api_helpers import running_api

    world = build_world(store, launch_id=None)
    known = _known(world)
    rng = random.Random()
    paths: dict[str, Any] = openapi_document()["paths"]
    async with running_api(services) as api:
        for template, methods in paths.items():
            if template in _SKIPPED_ROUTES:
                continue
            for method, operation in methods.items():
                params = [p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"]
                for _ in range(scaled(15)):
                    path = re.sub(r"\{[^}]+\}", lambda _m: _path_value(rng, known), template)
                    query = {n: str(junk_value(rng, known))[:3000] for n in params if rng.random() < 0.6}
                    if rng.random() < 0.2:
                        query[junk_value(rng, known).__str__()[:50] or "k"] = "v"
                    before = project_snapshot(store.paths) if method != "get" else None
                    kwargs: dict[str, Any] = {"params": query}
                    if method == "post":
                        body = _body(rng, known)
                        kwargs.update(content=body if isinstance(body, bytes) else json.dumps(body).encode())
                        kwargs["headers"] = {"content-type": "application/json"}
                    response = await api.client.request(method.upper(), path, **kwargs)
                    reliability.fuzz[f"http {method.upper()} {template}"] += 1
                    if response.status_code == 503 and template.endswith("/review-run"):
                        # This app runs no supervisor: running a round is refused as exactly that.
                        assert response.json()["error"]["code"] == "docker_unavailable", response.text
                        assert project_snapshot(store.paths) == before
                        continue
                    if response.status_code >= 500:
                        reliability.server_errors += 1
                    assert response.status_code < 500, (method, path, response.text[:500])
                    assert "Traceback" not in response.text
                    if response.status_code >= 400:
                        try:
                            error = response.json()
                        except ValueError:
                            pytest.fail(
                                f"{method} {path} {query}: {response.status_code} {response.text[:300]!r}"
                            )
                        assert set(error) == {"error"} and {"code", "message"} <= set(error["error"]), error
                        if before is not None:
                            assert project_snapshot(store.paths) == before, (
                                method,
                                path,
                                response.text[:300],
                            )


def _path_value(rng: random.Random, known: list[str]) -> str:
    value = str(junk_value(rng, known))[:300]
    return "".join(c if c.isalnum() or c in "-_." else f"%{ord(c) & 0xFF:02X}" for c in value) or "x"


@pytest.mark.anyio
async def test_an_encoded_line_break_in_a_path_gets_the_json_error_shape(services: Services) -> None:
    from tests.capabilities.api_helpers import assert_error, running_api

    async with running_api(services) as api:
        # A malformed proposal ID is invalid_argument, as over MCP; the shape is the one JSON error.
        assert_error(await api.client.get("/proposals/a%0Ab"), 400, "invalid_argument")
        assert_error(await api.client.get("/memories/a%0Ab"), 404, "memory_not_found")


def _body(rng: random.Random, known: list[str]) -> Any:
    roll = rng.random()
    if roll < 0.15:
        return rng.choice([b"{not json", b"\xff\xfe\x00", b"", b"[1,2]", b"null", b'{"a":' * 2000])
    if roll < 0.3:
        return junk_value(rng, known)
    fields = [
        "scope",
        "kind",
        "title",
        "body_md",
        "expected_revision",
        "reason",
        "source_ids",
        "target_id",
        "tags",
        "importance",
        "status",
        "confidence",
        "pinned",
        "extra",
    ]
    return {f: junk_value(rng, known) for f in fields if rng.random() < 0.5}
