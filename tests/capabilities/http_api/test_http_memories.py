"""The memory routes of /api/v1 over real HTTP (uvicorn on loopback), with real SQLite.

Tests named ``test_fix_...`` pin a documented flaw of the seed that CONTRACTS says to fix; the
seed's behaviour (see the seed text) fails each of them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio
import pytest

from capabilities.services import Services
from store import Store
from tests.capabilities.api_helpers import Api, assert_error, read_sse, running_api, table_counts

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


async def create(api: Api, **fields: Any) -> dict[str, Any]:
    body = {"scope": "project", "kind": "decision", "title": "Use SQLite", "body_md": "WAL.", **fields}
    response = await api.client.post("/memories", json=body)
    assert response.status_code == 201, response.text
    memory: dict[str, Any] = response.json()["memory"]
    return memory


async def test_error_shape_is_one_json_object_everywhere(services: Services) -> None:
    async with running_api(services) as api:
        assert_error(await api.client.get("/memories/M-none"), 404, "memory_not_found")
        assert_error(await api.client.get("/no-such-route"), 404, "not_found")
        # A newline in the path (found by the schemathesis run) still answers in JSON.
        assert_error(await api.client.get("/memories/M-1%0A/diff"), 404, "memory_not_found")
        assert_error(await api.client.get("/no%0Aroute"), 404, "not_found")
        assert_error(await api.client.delete("/memories"), 405, "method_not_allowed")
        assert_error(await api.client.get("/memories", params={"limit": "x"}), 400, "invalid_argument")
        assert_error(await api.client.post("/memories", content=b"{not json"), 400, "invalid_argument")
        assert_error(await api.client.post("/memories", content=b"[1, 2]"), 400, "invalid_argument")
        assert_error(
            await api.client.post("/memories", content=b'{"confidence": NaN}'), 400, "invalid_argument"
        )
        assert_error(
            await api.client.post("/memories", content=b'{"title": "\\ud800"}'), 400, "invalid_argument"
        )
        huge = b'{"body_md": "' + b"x" * (2 * 1024 * 1024) + b'"}'
        assert_error(await api.client.post("/memories", content=huge), 400, "invalid_argument")
        nested = b"[" * 100_000 + b"]" * 100_000
        assert_error(await api.client.post("/memories", content=nested), 400, "invalid_argument")
        for deep in (nested, b"[" * 65 + b"]" * 65):  # past the one depth limit, however far
            body = b'{"scope": "project", "kind": "fact", "title": "t", "body_md": "b", "provenance": {"x": '
            error = assert_error(
                await api.client.post("/memories", content=body + deep + b"}}"), 400, "invalid_argument"
            )
            assert "nested more than 64 levels" in error["message"]
        assert (await api.client.get("/memories")).json()["items"] == []
        unauthenticated = await api.client.get("/memories", headers={"Authorization": "Bearer nope"})
        assert_error(unauthenticated, 401, "unauthenticated")


# -- create --------------------------------------------------------------------------------------


async def test_create_answers_201_with_every_field(services: Services) -> None:
    async with running_api(services) as api:
        memory = await create(api, tags=["db"], importance=70, source_event_id=0)
        assert set(memory) == {
            "id", "workspace_id", "scope", "kind", "title", "body_md", "tags", "provenance",
            "source_event_id", "source_session_id", "source_proposal_id", "confidence", "reliability",
            "importance", "status", "pinned", "revision", "archived_at", "resynthesis_status",
            "created_at", "updated_at", "checks",
        }  # fmt: skip
        assert (memory["status"], memory["revision"], memory["importance"], memory["tags"]) == (
            "active",
            1,
            70,
            ["db"],
        )
        assert memory["created_at"].endswith("Z")


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"title": "  "}, "invalid_memory"),
        ({"body_md": ""}, "invalid_memory"),
        ({"title": None}, "invalid_memory"),
        ({"title": 5}, "invalid_memory"),
        ({"tags": "x"}, "invalid_memory"),
        ({"surprise": True}, "invalid_memory"),
        ({"confidence": True}, "invalid_memory"),
        ({"provenance": {"sources": [{"id": "M-1"}]}}, "invalid_memory"),
        ({"source_event_id": -1}, "invalid_memory"),
    ],
)
async def test_create_refusals_change_nothing(services: Services, fields: dict[str, Any], code: str) -> None:
    async with running_api(services) as api:
        before = table_counts(api.store)
        body = {"scope": "project", "kind": "decision", "title": "t", "body_md": "b", **fields}
        assert_error(await api.client.post("/memories", json=body), 400, code)
        assert table_counts(api.store) == before


async def test_fix_create_bounds_confidence_and_reliability(services: Services) -> None:
    """The seed stored any number; CONTRACTS: default 0.5, within 0..1."""
    async with running_api(services) as api:
        for field, value in (("confidence", 1.01), ("reliability", -0.5), ("confidence", 7)):
            body = {"scope": "p", "kind": "k", "title": "t", "body_md": "b", field: value}
            assert_error(await api.client.post("/memories", json=body), 400, "invalid_memory")
        memory = await create(api, confidence=1, reliability=0)
        assert (memory["confidence"], memory["reliability"]) == (1, 0)
        assert (await create(api))["confidence"] == 0.5


async def test_fix_create_writes_revision_one_provenance_edges_and_redacts_the_title(
    services: Services,
) -> None:
    """The seed wrote no history row, no edges, and redacted only the body."""
    async with running_api(services) as api:
        source = await create(api, title="source")
        memory = await create(
            api,
            title=f"leaked {SECRET}",
            body_md=f"password={SECRET}",
            provenance={"sources": [{"type": "memory", "id": source["id"], "relation": "summarizes"}]},
        )
        assert SECRET not in memory["title"] and "[REDACTED]" in memory["title"]
        assert SECRET not in memory["body_md"]
        revisions = (await api.client.get(f"/memories/{memory['id']}/revisions")).json()["items"]
        assert [(r["revision"], r["reason"]) for r in revisions] == [(1, "created")]
        assert SECRET not in revisions[0]["title"]
        chain = (await api.client.get(f"/memories/{memory['id']}/source-chain")).json()
        assert [(e["source_type"], e["source_id"], e["relation"]) for e in chain["items"]] == [
            ("memory", source["id"], "summarizes")
        ]


async def test_create_stores_what_the_route_parsed_and_nothing_it_defaulted(services: Services) -> None:
    """The handler passes on the model it parsed: fields the body left out stay the store's defaults,
    and a default of the model (a source's ``relation``) is not written into the stored provenance."""
    async with running_api(services) as api:
        provenance = {"note": "n", "nested": {"k": [1, "two"]}, "sources": [{"type": "event", "id": 1}]}
        memory = await create(api, provenance=provenance, confidence=None)
        assert memory["provenance"] == provenance
        assert (memory["confidence"], memory["reliability"], memory["importance"]) == (0.5, 0.5, 50)
        chain = (await api.client.get(f"/memories/{memory['id']}/source-chain")).json()["items"]
        assert [(e["source_type"], e["source_id"], e["relation"]) for e in chain] == [
            ("event", "1", "derived_from")
        ]


async def test_create_and_revise_refuse_control_characters(services: Services) -> None:
    """One text rule for every memory surface: control characters reach terminals and the console."""
    async with running_api(services) as api:
        before = table_counts(api.store)
        body = {"scope": "project", "kind": "decision", "title": "\x1b[2J", "body_md": "b"}
        assert_error(await api.client.post("/memories", json=body), 400, "invalid_memory")
        assert table_counts(api.store) == before
        mid = (await create(api))["id"]
        revision = {"body_md": "bell\x07", "expected_revision": 1}
        assert_error(
            await api.client.post(f"/memories/{mid}/revisions", json=revision), 400, "invalid_revision"
        )


async def test_a_2xx_proves_the_audit_row_and_the_event_exist(services: Services) -> None:
    async with running_api(services) as api:
        memory = await create(api)
        mid = memory["id"]
        for path, body in (
            (f"/memories/{mid}/revisions", {"body_md": "v2", "expected_revision": 1}),
            (f"/memories/{mid}/pin", None),
            (f"/memories/{mid}/archive", None),
            (f"/memories/{mid}/restore", None),
        ):
            response = await api.client.post(path, json=body)
            assert response.status_code == 200, response.text

        def read(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            rows = conn.execute(
                "SELECT a.action, a.actor, e.type FROM audit_log a JOIN events e ON e.id = a.event_id"
                " WHERE a.target_id = ? ORDER BY a.id",
                (mid,),
            ).fetchall()
            return [tuple(r) for r in rows]

        assert api.store.db.read(read) == [
            ("memory.created", "alice", "memory.recorded"),
            ("memory.revised", "alice", "memory.revised"),
            ("memory.pin", "alice", "memory.pinned"),
            ("memory.archive", "alice", "memory.archived"),
            ("memory.restore", "alice", "memory.restored"),
        ]


# -- list and detail -----------------------------------------------------------------------------


async def test_list_pagination_edges(services: Services) -> None:
    async with running_api(services) as api:
        empty = (await api.client.get("/memories")).json()
        assert empty == {"items": [], "next_cursor": None}
        ids = [(await create(api, title=f"n{n}"))["id"] for n in range(5)]
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 2}
        pages = 0
        while True:
            page = (await api.client.get("/memories", params=params)).json()
            seen += [item["id"] for item in page["items"]]
            pages += 1
            if page["next_cursor"] is None:
                break
            params["cursor"] = page["next_cursor"]
        assert (seen, pages) == (ids, 3)
        exact = (await api.client.get("/memories", params={"limit": 5})).json()
        assert exact["next_cursor"] is None and len(exact["items"]) == 5
        assert len((await api.client.get("/memories", params={"limit": 200})).json()["items"]) == 5
        assert len((await api.client.get("/memories", params={"limit": 1})).json()["items"]) == 1
        for limit in ("0", "201", "-3", "1.5", "ten"):
            assert_error(await api.client.get("/memories", params={"limit": limit}), 400, "invalid_argument")
        assert_error(await api.client.get("/memories", params={"cursor": "%%%"}), 400, "invalid_argument")


async def test_fix_list_q_is_a_literal_trimmed_case_insensitive_substring(services: Services) -> None:
    """The seed's LIKE search treated ``%`` and ``_`` as wildcards."""
    async with running_api(services) as api:
        percent = (await create(api, title="Reached 100% coverage"))["id"]
        await create(api, title="Reached 1000 coverage")
        underscore = (await create(api, body_md="Prefer SNAKE_CASE names"))["id"]
        await create(api, body_md="Prefer snakeXcase names")

        async def search(q: str) -> list[str]:
            response = await api.client.get("/memories", params={"q": q})
            return [item["id"] for item in response.json()["items"]]

        assert await search("0%") == [percent]
        assert await search("%") == [percent]
        assert await search("e_c") == [underscore]
        assert await search("_") == [underscore]
        assert await search("  snake_case  ") == [underscore]
        assert len(await search("   ")) == 4  # a blank q filters nothing


async def test_list_excludes_archived_and_detail_still_reads_it(services: Services) -> None:
    async with running_api(services) as api:
        kept = (await create(api, scope="T-1"))["id"]
        gone = (await create(api, scope="T-1"))["id"]
        assert (await api.client.post(f"/memories/{gone}/archive")).status_code == 200
        listed = (await api.client.get("/memories", params={"scope": "T-1"})).json()["items"]
        assert [item["id"] for item in listed] == [kept]
        archived = (await api.client.get("/memories", params={"status": "archived"})).json()["items"]
        assert [item["id"] for item in archived] == [gone]
        detail = (await api.client.get(f"/memories/{gone}")).json()
        assert detail["memory"]["status"] == "archived"
        assert_error(
            await api.client.get(f"/memories/{gone}", params={"follow_aliases": "maybe"}),
            400,
            "invalid_argument",
        )


# -- revisions and diffs -------------------------------------------------------------------------


async def test_fix_revisions_keep_title_and_reason_and_conflict_on_a_stale_expectation(
    services: Services,
) -> None:
    """The seed ignored the reason, snapshotted no title, and checked the revision before the UPDATE."""
    async with running_api(services) as api:
        mid = (await create(api))["id"]
        ok = await api.client.post(
            f"/memories/{mid}/revisions",
            json={
                "body_md": "WAL, FULL sync.",
                "title": "SQLite settings",
                "reason": "be precise",
                "expected_revision": 1,
            },
        )
        assert ok.status_code == 200, ok.text
        assert ok.json()["memory"]["revision"] == 2
        assert ok.json()["revision"]["reason"] == "be precise"
        before = table_counts(api.store)
        stale = await api.client.post(
            f"/memories/{mid}/revisions", json={"body_md": "x", "expected_revision": 1}
        )
        assert assert_error(stale, 409, "memory_revision_conflict")["details"] == {"current_revision": 2}
        assert table_counts(api.store) == before
        history = (await api.client.get(f"/memories/{mid}/revisions")).json()["items"]
        assert [(r["revision"], r["title"], r["reason"]) for r in history] == [
            (1, "Use SQLite", "created"),
            (2, "SQLite settings", "be precise"),
        ]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"body_md": " ", "expected_revision": 1}, "invalid_revision"),
        ({"expected_revision": 1}, "invalid_revision"),
        ({"body_md": "x", "expected_revision": 1, "extra": 1}, "invalid_revision"),
        ({"body_md": "x", "expected_revision": 0}, "invalid_expected_revision"),
        ({"body_md": "x", "expected_revision": "1"}, "invalid_expected_revision"),
        ({"body_md": "x"}, "invalid_expected_revision"),
    ],
)
async def test_revision_validation(services: Services, body: dict[str, Any], code: str) -> None:
    async with running_api(services) as api:
        mid = (await create(api))["id"]
        assert_error(await api.client.post(f"/memories/{mid}/revisions", json=body), 400, code)
        missing = await api.client.post(
            "/memories/M-none/revisions", json={"body_md": "x", "expected_revision": 1}
        )
        assert_error(missing, 404, "memory_not_found")


async def test_concurrent_revisions_over_http_let_exactly_one_through(services: Services) -> None:
    async with running_api(services) as api:
        mid = (await create(api))["id"]
        statuses: list[int] = []

        async def attempt(n: int) -> None:
            response = await api.client.post(
                f"/memories/{mid}/revisions", json={"body_md": f"writer {n}", "expected_revision": 1}
            )
            statuses.append(response.status_code)

        async with anyio.create_task_group() as tg:
            for n in range(10):
                tg.start_soon(attempt, n)
        assert sorted(statuses) == [200] + [409] * 9


async def test_fix_diff_compares_stored_revisions(services: Services) -> None:
    """The seed's diff was a placeholder: labels echoed, current body, ``changed`` always true."""
    async with running_api(services) as api:
        mid = (await create(api, body_md="alpha\nbeta\ngamma"))["id"]
        for expected, body, title in ((1, "alpha\nBETA\ngamma", None), (2, "alpha\nBETA\ngamma", "Renamed")):
            payload: dict[str, Any] = {"body_md": body, "expected_revision": expected}
            if title:
                payload["title"] = title
            assert (await api.client.post(f"/memories/{mid}/revisions", json=payload)).status_code == 200
        default = (await api.client.get(f"/memories/{mid}/diff")).json()
        assert (default["from"], default["to"], default["changed"]) == (1, 3, True)
        assert "-beta\n+BETA\n" in default["diff"] and "-Use SQLite\n+Renamed\n" in default["diff"]
        one_two = (await api.client.get(f"/memories/{mid}/diff", params={"from": "1", "to": "2"})).json()
        assert one_two["body_changed"] and not one_two["title_changed"]
        same = (await api.client.get(f"/memories/{mid}/diff", params={"from": "latest", "to": "3"})).json()
        assert (same["changed"], same["diff"]) == (False, "")
        for label in ("4", "0", "first", "1.0"):
            response = await api.client.get(f"/memories/{mid}/diff", params={"from": label})
            assert_error(response, 404, "revision_not_found")
        assert_error(await api.client.get("/memories/M-none/diff"), 404, "memory_not_found")


# -- graph, source chain, merges -----------------------------------------------------------------


def insert_alias(store: Store, alias: str, canonical: str) -> None:
    store.db.write(
        lambda conn: conn.execute(
            "INSERT INTO memory_aliases (alias_id, canonical_id, reason, actor, created_at)"
            " VALUES (?, ?, 'legacy', 'seed', '2020-01-01T00:00:00.000000Z')",
            (alias, canonical),
        )
    )


async def test_fix_graph_resolves_chains_and_detects_cycles(services: Services) -> None:
    """The seed returned direct rows only: no resolution, no cycle detection."""
    async with running_api(services) as api:
        a, b, c = [(await create(api, title=t))["id"] for t in "abc"]
        insert_alias(api.store, a, b)
        insert_alias(api.store, b, c)
        graph = (await api.client.get(f"/memories/{a}/graph")).json()
        assert (graph["canonical_chain"], graph["canonical_id"], graph["cycle"]) == ([a, b, c], c, False)
        assert [row["canonical_id"] for row in graph["items"]] == [b]
        followed = (await api.client.get(f"/memories/{a}", params={"follow_aliases": "true"})).json()
        assert (followed["memory"]["id"], followed["resolved"], followed["alias_chain"]) == (
            c,
            True,
            [a, b, c],
        )
        insert_alias(api.store, c, a)
        looped = (await api.client.get(f"/memories/{b}/graph")).json()
        assert (looped["cycle"], looped["canonical_id"]) == (True, None)
        assert_error(
            await api.client.get(f"/memories/{a}", params={"follow_aliases": "1"}), 409, "memory_alias_cycle"
        )


async def test_fix_source_chain_recurses_and_marks_missing_sources(services: Services) -> None:
    """The seed listed direct edges only and never looked sources up."""
    async with running_api(services) as api:
        root = await create(api, title="root")
        middle = await create(
            api, title="middle", provenance={"sources": [{"type": "memory", "id": root["id"]}]}
        )
        top = await create(
            api,
            title="top",
            provenance={
                "sources": [{"type": "memory", "id": middle["id"]}, {"type": "memory", "id": "M-lost"}]
            },
        )
        deep = (await api.client.get(f"/memories/{top['id']}/source-chain", params={"depth": 3})).json()
        assert deep["depth"] == 3
        first, lost = deep["items"]
        assert (first["missing"], lost["missing"], lost["exists"]) == (False, True, False)
        assert first["sources"][0]["source_id"] == root["id"]
        assert first["sources"][0]["source"]["title"] == "root"
        for depth in ("0", "11", "x"):
            response = await api.client.get(f"/memories/{top['id']}/source-chain", params={"depth": depth})
            assert_error(response, 400, "invalid_argument")


async def test_fix_merge_creates_a_canonical_entry_with_history_and_refuses_double_merges(
    services: Services,
) -> None:
    """The seed wrote no revision 1 or edges and allowed merged or cyclic inputs."""
    async with running_api(services) as api:
        source = await create(api, title="source", body_md="S.", importance=5)
        target = await create(api, title="target", body_md="T.", importance=80, tags=["t"])
        merged = await api.client.post(f"/memories/{source['id']}/merge", params={"target_id": target["id"]})
        assert merged.status_code == 201, merged.text
        answer = merged.json()
        canonical = answer["memory"]
        assert canonical["id"].startswith("M-merge-")
        assert (canonical["title"], canonical["body_md"], canonical["importance"], canonical["tags"]) == (
            "target",
            "T.\n\nS.",
            80,
            ["t"],
        )
        assert [m["status"] for m in answer["merged"]] == ["merged", "merged"]
        assert {a["alias_id"] for a in answer["aliases"]} == {source["id"], target["id"]}
        revisions = (await api.client.get(f"/memories/{canonical['id']}/revisions")).json()["items"]
        assert [r["revision"] for r in revisions] == [1]
        edges = (await api.client.get(f"/memories/{canonical['id']}/source-chain")).json()["items"]
        assert {e["source_id"] for e in edges} == {source["id"], target["id"]}
        before = table_counts(api.store)
        again = await api.client.post(
            f"/memories/{source['id']}/merge", params={"target_id": canonical["id"]}
        )
        assert_error(again, 409, "memory_merge_conflict")
        itself = await api.client.post(
            f"/memories/{canonical['id']}/merge", params={"target_id": canonical["id"]}
        )
        assert_error(itself, 409, "memory_merge_conflict")
        assert table_counts(api.store) == before
        other = await create(api, title="other")
        insert_alias(api.store, other["id"], canonical["id"])  # legacy alias row: a merge would loop
        looping = await api.client.post(
            f"/memories/{canonical['id']}/merge", params={"target_id": other["id"]}
        )
        assert_error(looping, 409, "memory_merge_conflict")
        unknown = await api.client.post(f"/memories/{canonical['id']}/merge", params={"target_id": "M-none"})
        assert_error(unknown, 404, "memory_target_not_found")
        assert_error(
            await api.client.post(f"/memories/{canonical['id']}/merge"), 400, "invalid_memory_target"
        )


async def test_merge_legacy(services: Services) -> None:
    async with running_api(services) as api:
        source, target = (await create(api, title="s"))["id"], (await create(api, title="t"))["id"]
        response = await api.client.post(f"/memories/{source}/merge-legacy", params={"target_id": target})
        assert response.status_code == 200, response.text
        memory = response.json()["memory"]
        assert (memory["status"], memory["provenance"]["merged_into"]) == ("merged", target)
        missing = await api.client.post(f"/memories/{target}/merge-legacy", params={"target_id": "M-none"})
        assert_error(missing, 404, "memory_target_not_found")


# -- state actions and resynthesis ---------------------------------------------------------------


async def test_fix_state_actions_follow_the_permitted_prior_state_table(services: Services) -> None:
    """The seed's restore set ``active`` whatever the prior status, merged included."""
    async with running_api(services) as api:
        mid = (await create(api))["id"]

        async def act(action: str, status: int = 200, code: str | None = None) -> dict[str, Any]:
            response = await api.client.post(f"/memories/{mid}/{action}")
            if code is not None:
                assert_error(response, status, code)
                return {}
            assert response.status_code == status, response.text
            memory: dict[str, Any] = response.json()["memory"]
            return memory

        await act("unpin", 409, "memory_update_conflict")
        await act("restore", 409, "memory_update_conflict")
        assert (await act("pin"))["pinned"] is True
        await act("pin", 409, "memory_update_conflict")
        assert (await act("archive"))["status"] == "archived"
        await act("archive", 409, "memory_update_conflict")
        assert (await act("restore"))["status"] == "active"
        assert (await act("unpin"))["pinned"] is False
        other = (await create(api))["id"]
        assert (
            await api.client.post(f"/memories/{mid}/merge", params={"target_id": other})
        ).status_code == 201
        before = table_counts(api.store)
        await act("restore", 409, "memory_update_conflict")
        await act("pin", 409, "memory_update_conflict")
        assert table_counts(api.store) == before
        assert_error(await api.client.post(f"/memories/{mid}/explode"), 404, "not_found")
        assert_error(await api.client.post(f"/memories/{mid}/pin", json={"x": 1}), 400, "invalid_argument")


async def test_fix_resynthesis_moves_on_to_completed(services: Services) -> None:
    """The seed only set a flag that no worker ever consumed."""
    async with running_api(services) as api:
        mid = (await create(api, body_md="Keep WAL.\n\n\nKeep WAL.\n\nSync FULL.   "))["id"]
        async with api.client.stream("GET", "/events/stream") as stream:
            lines = stream.aiter_lines()
            response = await api.client.post(f"/memories/{mid}/resynthesize", json={"reason": "tidy"})
            assert response.status_code == 202, response.text
            assert response.json()["request"]["status"] == "requested"
            events = await read_sse(lines, 2)
        assert [e["event"] for e in events] == ["memory.resynthesis_requested", "memory.resynthesized"]
        memory = (await api.client.get(f"/memories/{mid}")).json()["memory"]
        assert (memory["resynthesis_status"], memory["revision"]) == ("completed", 2)
        assert memory["body_md"] == "Keep WAL.\n\nSync FULL."
        again = await api.client.post(f"/memories/{mid}/archive")
        assert again.status_code == 200
        assert_error(
            await api.client.post(f"/memories/{mid}/resynthesize"), 409, "memory_resynthesis_conflict"
        )
        assert_error(await api.client.post("/memories/M-none/resynthesize"), 404, "memory_not_found")
