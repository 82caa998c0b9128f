"""The work routes of /api/v1 over real HTTP: proposals, timelines, patches, events and the live stream."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from capabilities.http_api import api_state
from capabilities.services import Services
from capabilities.serving import WebService
from store import Store, append_event, init_project, open_store
from store.errors import InternalError
from tests.capabilities.api_helpers import assert_error, read_sse, running_api, seed_review
from tests.store.patches.artifact_helpers import tamper
from tests.store.work_helpers import DIFF, DIFF_V2, new_task

pytestmark = pytest.mark.anyio


async def test_proposal_list_pages_with_an_opaque_cursor(services: Services) -> None:
    store = services.store
    task = new_task(store)
    ids = [
        store.proposals.create(
            task_id=task.id, agent_id="implementer-1", title=f"p{n}", patch=DIFF, actor="op"
        )[0]["id"]
        for n in range(3)
    ]
    async with running_api(services) as api:
        first = (await api.client.get("/proposals", params={"limit": 2})).json()
        assert [p["id"] for p in first["items"]] == ids[:2]
        assert first["next_cursor"] and ids[1] not in first["next_cursor"]
        assert {"status", "consensus", "patch"} <= set(first["items"][0])
        second = (
            await api.client.get("/proposals", params={"limit": 2, "cursor": first["next_cursor"]})
        ).json()
        assert ([p["id"] for p in second["items"]], second["next_cursor"]) == (ids[2:], None)
        pending = (await api.client.get("/proposals", params={"status": "pending"})).json()["items"]
        assert len(pending) == 3
        none = (await api.client.get("/proposals", params={"status": "accepted", "task_id": task.id})).json()
        assert none == {"items": [], "next_cursor": None}
        for params in ({"limit": "0"}, {"limit": "201"}, {"cursor": "bogus"}, {"status": "sleeping"}):
            assert_error(await api.client.get("/proposals", params=params), 400, "invalid_argument")


async def test_proposal_detail_lists_votes_and_which_count(services: Services) -> None:
    seeded = seed_review(services.store)
    async with running_api(services) as api:
        detail = (await api.client.get(f"/proposals/{seeded['proposal_id']}")).json()
        assert detail["proposal"]["current_version"] == 2
        assert [v["version"] for v in detail["proposal"]["versions"]] == [1, 2]
        counts = {v["id"]: v["counts"] for v in detail["votes"]}
        assert counts == {seeded["old_vote_id"]: False, seeded["new_vote_id"]: True}
        assert detail["consensus"]["approvals"] == 1
        assert_error(await api.client.get("/proposals/P-none"), 404, "not_found")
        assert_error(await api.client.get("/proposals/bad%20id"), 400, "invalid_argument")


async def test_timeline_carries_the_oracle_warning_with_its_citations(services: Services) -> None:
    seeded = seed_review(services.store)
    async with running_api(services) as api:
        timeline = (await api.client.get(f"/proposals/{seeded['proposal_id']}/timeline")).json()
        assert timeline["proposal"]["id"] == seeded["proposal_id"]
        ids = [event["id"] for event in timeline["events"]]
        assert ids == sorted(ids)
        (warning,) = [e for e in timeline["events"] if e["type"] == "memory.oracle_warning"]
        assert warning["payload"]["severity"] == "warning"
        assert [m["id"] for m in warning["cited_memories"]] == [
            seeded["decision_id"],
            seeded["constraint_id"],
        ]
        votes = [e["vote"]["counts"] for e in timeline["events"] if e["type"] == "vote.cast"]
        assert votes == [False, True]
        assert_error(await api.client.get("/proposals/P-none/timeline"), 404, "not_found")


async def test_patch_is_served_as_verified_text(services: Services) -> None:
    seeded = seed_review(services.store)
    pid = seeded["proposal_id"]
    async with running_api(services) as api:
        current = await api.client.get(f"/proposals/{pid}/patch")
        assert current.status_code == 200
        assert current.headers["content-type"].startswith("text/plain")
        assert (current.text, current.headers["x-patch-version"]) == (DIFF_V2, "2")
        first = await api.client.get(f"/proposals/{pid}/patch", params={"version": 1})
        assert first.text == DIFF
        assert_error(
            await api.client.get(f"/proposals/{pid}/patch", params={"version": 9}),
            404,
            "patch_version_not_found",
        )
        assert_error(
            await api.client.get(f"/proposals/{pid}/patch", params={"version": "x"}), 400, "invalid_argument"
        )
        tamper(services.store, pid, 1, DIFF.replace("TWO", "two").encode())  # the file, or the blob
        assert_error(
            await api.client.get(f"/proposals/{pid}/patch", params={"version": 1}), 409, "artifact_mismatch"
        )


async def test_events_after_an_id(services: Services) -> None:
    seeded = seed_review(services.store)
    async with running_api(services) as api:
        everything = (await api.client.get("/events", params={"limit": 500})).json()
        ids = [event["id"] for event in everything["items"]]
        assert ids == sorted(ids) and not everything["more"]
        page = (await api.client.get("/events", params={"after": ids[2], "limit": 2})).json()
        assert [e["id"] for e in page["items"]] == ids[3:5]
        assert (page["next_after"], page["more"]) == (ids[4], True)
        past_end = (await api.client.get("/events", params={"after": ids[-1]})).json()
        assert past_end == {"items": [], "next_after": ids[-1], "more": False}
        mine = (await api.client.get("/events", params={"proposal_id": seeded["proposal_id"]})).json()[
            "items"
        ]
        assert {e["proposal_id"] for e in mine} == {seeded["proposal_id"]}
        for params in ({"after": "-1"}, {"after": "x"}, {"limit": "0"}, {"limit": "501"}):
            assert_error(await api.client.get("/events", params=params), 400, "invalid_argument")


def warn(store: Store, proposal_id: str, n: int, *, padding: int = 0) -> int:
    def write(conn: sqlite3.Connection) -> int:
        return append_event(
            conn, "test.tick", actor="test", proposal_id=proposal_id, payload={"n": n, "pad": "x" * padding}
        ).id

    return store.db.write(write)


async def test_the_stream_sends_the_backlog_then_live_events(services: Services) -> None:
    store = services.store
    seeded = seed_review(store)
    pid = seeded["proposal_id"]
    async with running_api(services) as api:
        last = (await api.client.get("/events", params={"limit": 500})).json()["next_after"]
        async with api.client.stream("GET", "/events/stream", params={"after": last - 2}) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()
            backlog = await read_sse(lines, 2)
            assert [int(e["id"]) for e in backlog] == [last - 1, last]
            written = warn(store, pid, 1)  # another writer (no poke): found by the poller
            (live,) = await read_sse(lines, 1)
            assert (int(live["id"]), live["event"], live["data"]["payload"]["n"]) == (written, "test.tick", 1)
        # Resume with Last-Event-ID, filtered to one proposal.
        warn(store, "P-other", 2)
        mine = warn(store, pid, 3)
        async with api.client.stream(
            "GET", "/events/stream", params={"proposal_id": pid}, headers={"Last-Event-ID": str(written)}
        ) as stream:
            (resumed,) = await read_sse(stream.aiter_lines(), 1)
            assert int(resumed["id"]) == mine
        assert_error(await api.client.get("/events/stream", params={"after": "-5"}), 400, "invalid_argument")
        assert_error(
            await api.client.get("/events/stream", headers={"Last-Event-ID": "abc"}), 400, "invalid_argument"
        )


async def test_many_clients_share_one_poller(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    store = services.store
    calls: list[int] = []
    original = store.event_feed.after

    def counted(after: int = 0, **kwargs: Any) -> Any:
        calls.append(after)
        return original(after, **kwargs)

    monkeypatch.setattr(store.event_feed, "after", counted)
    web = WebService(services, poll_interval=0.05)
    async with running_api(services, web=web) as api:
        clients = 20
        async with anyio.create_task_group() as tg:
            received: list[int] = []
            ready = anyio.Event()
            connected: list[int] = []

            async def listen() -> None:
                async with api.client.stream("GET", "/events/stream") as stream:
                    lines = stream.aiter_lines()
                    connected.append(1)
                    if len(connected) == clients:
                        ready.set()
                    (event,) = await read_sse(lines, 1)
                    received.append(int(event["id"]))

            for _ in range(clients):
                tg.start_soon(listen)
            with anyio.fail_after(20):
                await ready.wait()
                await web.broadcaster.wait_for_subscribers(clients)
            calls.clear()
            polls_before = web.broadcaster.polls
            written = warn(store, "P-x", 1)
        assert received == [written] * clients
        # Every read of the log while the clients waited was one of the poller's, none per client
        # (a poll in flight at either end may be counted on one side only).
        polls = web.broadcaster.polls - polls_before
        assert polls >= 1
        assert abs(len(calls) - polls) <= 1


async def test_a_slow_client_is_dropped_and_cannot_stall_the_others(services: Services) -> None:
    store = services.store
    web = WebService(services, poll_interval=0.02, queue_size=32, write_timeout=2.0)
    async with running_api(services, web=web) as api:
        assert api.address.port is not None
        # The slow client: asks for the stream and never reads a byte.
        slow = socket.create_connection(("127.0.0.1", api.address.port))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        request = (
            "GET /api/v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {api.token}\r\n\r\n"
        )
        slow.sendall(request.encode())
        try:
            with anyio.fail_after(20):
                await web.broadcaster.wait_for_subscribers(1)
            async with api.client.stream("GET", "/events/stream") as stream:
                lines = stream.aiter_lines()
                with anyio.fail_after(20):
                    await web.broadcaster.wait_for_subscribers(2)
                bursts = 0
                with anyio.fail_after(120):
                    # Bursts smaller than a queue, each read by the fast client before the next:
                    # the fast client keeps up; the slow one's socket and then its queue fill up.
                    while web.broadcaster.subscriber_count > 1:
                        written = [warn(store, "P-x", n, padding=16_000) for n in range(16)]
                        web.broadcaster.poke()
                        received = await read_sse(lines, 16)
                        assert [int(e["id"]) for e in received] == written
                        bursts += 1
                assert web.broadcaster.dropped + web.broadcaster.stalled >= 1
                assert bursts > 2  # it took a backlog of ~megabytes, not a single event
                # The fast client is still served, promptly.
                last = warn(store, "P-x", -1)
                web.broadcaster.poke()
                (event,) = await read_sse(lines, 1, seconds=10)
                assert int(event["id"]) == last
        finally:
            slow.close()


async def test_an_open_stream_ends_when_its_token_is_revoked(services: Services) -> None:
    store = services.store
    issued = store.grants.mint_token(name="carol", actor="operator")
    web = WebService(services, heartbeat=0.2)
    async with running_api(services, name="carol", token=issued.token, web=web) as api:
        with anyio.fail_after(20):
            async with api.client.stream("GET", "/events/stream") as stream:
                lines = stream.aiter_lines()
                assert await anext(lines) == "retry: 2000"
                store.grants.revoke_token(issued.record.id, actor="operator")
                # The stream ends at the next heartbeat's check (fail_after bounds the wait).
                rest = [line async for line in lines]
    # At most the revocation's own event went out before the check stopped the stream.
    streamed = {line.removeprefix("event: ") for line in rest if line.startswith("event: ")}
    assert streamed <= {"operator_token.revoked"}


async def test_two_services_side_by_side_each_answer_from_their_own_store(
    services: Services, tmp_path: Path
) -> None:
    """The routes are shared module-level tables: what they serve comes from each app's state."""
    paths, _ = init_project(tmp_path / "other")
    other = Services(store=open_store(paths))
    try:
        pid = seed_review(services.store)["proposal_id"]
        async with running_api(services) as first, running_api(other) as second:
            assert (await first.client.get(f"/proposals/{pid}")).status_code == 200
            assert_error(await second.client.get(f"/proposals/{pid}"), 404, "not_found")
            assert [p["id"] for p in (await first.client.get("/proposals")).json()["items"]] == [pid]
            assert (await second.client.get("/proposals")).json()["items"] == []
    finally:
        other.store.close()


def test_an_app_without_api_state_is_an_internal_error() -> None:
    request = Request({"type": "http", "app": Starlette(), "headers": []})
    with pytest.raises(InternalError):
        api_state(request)
