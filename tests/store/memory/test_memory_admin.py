"""The memory administration store behind the HTTP API, over real SQLite files.

Each test named ``test_fix_...`` pins a flaw of the seed's HTTP memory endpoints that CONTRACTS
says to fix: the seed's behaviour (described in the seed text) would fail it.
"""

from __future__ import annotations

import base64
import sqlite3
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import Store
from store.errors import Conflict, InvalidArgument, NotFound
from store.events._audit import list_audit
from store.events._idempotency import Committed, IdempotencyClaim
from store.events._log import list_events
from store.memory._actions import lexical_resynthesis
from store.memory._redaction import REDACTED, _redact_all, redact

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


def create(store: Store, **fields: Any) -> dict[str, Any]:
    body = {"scope": "project", "kind": "decision", "title": "Use SQLite", "body_md": "WAL mode.", **fields}
    memory: dict[str, Any] = store.memory_admin.create(body, actor="alice").body["memory"]
    return memory


def counts(store: Store) -> tuple[int, int]:
    def read(conn: sqlite3.Connection) -> tuple[int, int]:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        audits = conn.execute("SELECT count(*) FROM audit_log").fetchone()[0]
        return int(events), int(audits)

    return store.db.read(read)


# -- create --------------------------------------------------------------------------------------


def test_create_defaults_history_event_and_audit(store: Store) -> None:
    memory = create(store)
    assert memory["id"].startswith("M-")
    assert memory["status"] == "active"
    assert memory["revision"] == 1
    assert memory["confidence"] == 0.5
    assert memory["reliability"] == 0.5
    assert memory["importance"] == 50
    assert memory["pinned"] is False
    history = store.memory_admin.revisions(memory["id"])["items"]
    assert [(r["revision"], r["title"], r["body_md"]) for r in history] == [(1, "Use SQLite", "WAL mode.")]
    audit = store.db.read(lambda conn: list_audit(conn, target_id=memory["id"]))
    assert [row.action for row in audit] == ["memory.created"]
    events = store.db.read(lambda conn: list_events(conn, types=("memory.recorded",)))
    assert events[-1].id == audit[0].event_id
    assert events[-1].payload["memory_id"] == memory["id"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", "   "),
        ("body_md", ""),
        ("title", None),
        ("scope", ""),
        ("confidence", 1.5),
        ("reliability", -0.1),
        ("confidence", "0.5"),
        ("tags", "not-a-list"),
        ("provenance", []),
        ("provenance", {"sources": [{"type": "memory"}]}),
        ("importance", True),
        ("unknown_field", 1),
    ],
)
def test_create_refuses_bad_input_and_changes_nothing(store: Store, field: str, value: object) -> None:
    before = counts(store)
    with pytest.raises(InvalidArgument) as caught:
        create(store, **{field: value})
    assert caught.value.code == "invalid_memory"
    assert counts(store) == before


def test_fix_create_bounds_confidence_and_reliability(store: Store) -> None:
    """The seed accepted any number; CONTRACTS: 0..1."""
    assert create(store, confidence=0, reliability=1)["confidence"] == 0
    with pytest.raises(InvalidArgument):
        create(store, confidence=2)


def test_fix_create_writes_revision_one_and_provenance_edges(store: Store) -> None:
    first = create(store)
    second = create(
        store,
        provenance={
            "sources": [
                {"type": "memory", "id": first["id"]},
                {"type": "event", "id": 1, "relation": "cites"},
            ]
        },
    )
    assert [r["revision"] for r in store.memory_admin.revisions(second["id"])["items"]] == [1]
    chain = store.memory_admin.source_chain(second["id"])["items"]
    assert [(e["source_type"], e["source_id"], e["relation"]) for e in chain] == [
        ("memory", first["id"], "derived_from"),
        ("event", "1", "cites"),
    ]


def test_fix_create_redacts_title_as_well_as_body(store: Store) -> None:
    memory = create(
        store,
        title=f"token {GITHUB_TOKEN}",
        body_md=f"key {AWS_KEY} and password=hunter2",
        tags=[f"sk-{'x' * 30}"],
    )
    assert GITHUB_TOKEN not in memory["title"]
    assert REDACTED in memory["title"]
    assert AWS_KEY not in memory["body_md"]
    assert "hunter2" not in memory["body_md"]
    assert memory["tags"] == [REDACTED]

    def raw(conn: sqlite3.Connection) -> sqlite3.Row:
        row: sqlite3.Row = conn.execute(
            "SELECT title, body_md, tags FROM memory_entries WHERE id = ?", (memory["id"],)
        ).fetchone()
        return row

    row = store.db.read(raw)  # redacted on write, not only in the answer
    assert GITHUB_TOKEN not in row["title"]
    assert AWS_KEY not in row["body_md"]


@pytest.mark.parametrize(
    "secret",
    [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
        "Authorization: Bearer abcdefghijklmnop.qrstuvwx",
        "sk-proj-" + "A" * 40,
        "github_pat_" + "B" * 40,
        "xoxb-1234567890-abcdef",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ],
)
def test_redaction_patterns(secret: str) -> None:
    out = redact(f"before {secret} after")
    assert REDACTED in out
    assert out.startswith("before ")
    assert "after" in out


_FRAGMENTS = st.sampled_from(
    [
        "password", "PassWord", "paſsword", "pwd", "secret", "api_key", "API-KEY", "ACCESS_TOKEN",
        "authtoken", "aws_session_token", "=", ": ", " ", "\n", "hunter2", "Bearer ", "bEaReR\t",
        "abcdefghijklmnop", "AKIA", "ABCDEFGHIJKLMNOP", "ghp_", "github_pat_", "sk-", "sk-proj-",
        "xoxb-", "_" * 3, "x" * 24, "-----BEGIN PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
        "K", "\u212a", "ſ", "İ", "ß", "token", "key",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=14).map("".join))
def test_the_redaction_shortcut_never_skips_a_secret(text: str) -> None:
    """The substring pre-check that spares clean text the regexes agrees with running them all."""
    assert redact(text) == _redact_all(text)


# -- list ----------------------------------------------------------------------------------------


def test_list_pages_oldest_first_with_an_opaque_cursor(store: Store) -> None:
    ids = [create(store, title=f"entry {n}")["id"] for n in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        page = store.memory_admin.list(limit=2, cursor=cursor)
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert not cursor.startswith("M-")  # opaque, not the raw ID
    assert seen == ids
    assert store.memory_admin.list(limit=5)["next_cursor"] is None


@pytest.mark.parametrize("limit", [0, 201, -1])
def test_list_limit_bounds(store: Store, limit: int) -> None:
    with pytest.raises(InvalidArgument):
        store.memory_admin.list(limit=limit)


def test_list_bad_cursor(store: Store) -> None:
    with pytest.raises(InvalidArgument):
        store.memory_admin.list(cursor="not-a-cursor!")
    # "[[[[..." decodes to JSON that json.loads answers with RecursionError, not ValueError.
    for raw in (b"[" * 100_000, b'[["2026", "M-1"]]', b'["2026", "M-1", "x"]', b"[NaN, 1]"):
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        with pytest.raises(InvalidArgument, match="cursor is not one this API returned"):
            store.memory_admin.list(cursor=cursor)


def test_fix_list_matches_percent_and_underscore_literally(store: Store) -> None:
    """The seed used SQL LIKE, where ``%`` and ``_`` are wildcards."""
    percent = create(store, title="100% coverage")["id"]
    create(store, title="1000 coverage")
    underscore = create(store, body_md="use snake_case")["id"]
    create(store, body_md="use snakeXcase")
    assert [i["id"] for i in store.memory_admin.list(q="0%")["items"]] == [percent]
    assert [i["id"] for i in store.memory_admin.list(q="e_c")["items"]] == [underscore]
    assert store.memory_admin.list(q="%")["items"][0]["id"] == percent
    assert [i["id"] for i in store.memory_admin.list(q="  SNAKE_CASE  ")["items"]] == [underscore]


def test_list_filters_and_archived(store: Store) -> None:
    kept = create(store, scope="T-1", kind="constraint")["id"]
    archived = create(store, scope="T-1", kind="constraint")["id"]
    store.memory_admin.act(archived, "archive", actor="alice")
    assert [i["id"] for i in store.memory_admin.list(scope=" T-1 ", kind="constraint")["items"]] == [kept]
    assert [i["id"] for i in store.memory_admin.list(status="archived")["items"]] == [archived]
    assert store.memory_admin.get(archived)["memory"]["status"] == "archived"  # detail still reads it


# -- revisions and diff --------------------------------------------------------------------------


def test_fix_revision_keeps_title_and_reason(store: Store) -> None:
    memory = create(store)
    answer = store.memory_admin.revise(
        memory["id"],
        {
            "body_md": "WAL mode, synchronous=FULL.",
            "title": "SQLite settings",
            "reason": "precise",
            "expected_revision": 1,
        },
        actor="alice",
    ).body
    assert answer["memory"]["revision"] == 2
    assert answer["memory"]["title"] == "SQLite settings"
    history = store.memory_admin.revisions(memory["id"])["items"]
    assert [(r["revision"], r["title"], r["reason"]) for r in history] == [
        (1, "Use SQLite", "created"),
        (2, "SQLite settings", "precise"),
    ]


def test_revision_errors(store: Store) -> None:
    memory = create(store)
    with pytest.raises(InvalidArgument) as blank:
        store.memory_admin.revise(memory["id"], {"body_md": " ", "expected_revision": 1}, actor="a")
    assert blank.value.code == "invalid_revision"
    with pytest.raises(InvalidArgument) as bad:
        store.memory_admin.revise(memory["id"], {"body_md": "x", "expected_revision": 0}, actor="a")
    assert bad.value.code == "invalid_expected_revision"
    with pytest.raises(Conflict) as stale:
        store.memory_admin.revise(memory["id"], {"body_md": "x", "expected_revision": 2}, actor="a")
    assert stale.value.code == "memory_revision_conflict"
    with pytest.raises(NotFound) as missing:
        store.memory_admin.revise("M-nope", {"body_md": "x", "expected_revision": 1}, actor="a")
    assert missing.value.code == "memory_not_found"


def test_fix_expected_revision_is_enforced_by_the_update_statement(store: Store) -> None:
    """The seed compared a value read earlier and then updated without the predicate."""
    memory = create(store)
    statements: list[str] = []
    conn = store.db.connection()
    conn.set_trace_callback(statements.append)
    try:
        store.memory_admin.revise(memory["id"], {"body_md": "v2", "expected_revision": 1}, actor="a")
    finally:
        conn.set_trace_callback(None)
    # SQLite's trace repeats a statement once per trigger program it runs; one distinct UPDATE.
    updates = list(
        dict.fromkeys(s for s in statements if s.lstrip().upper().startswith("UPDATE MEMORY_ENTRIES"))
    )
    assert len(updates) == 1
    assert "AND revision = 1" in updates[0]
    # No read of the entry precedes the guarded update.
    first_update = statements.index(updates[0])
    assert not any("FROM memory_entries" in s for s in statements[:first_update])


def test_concurrent_revisions_with_the_same_expectation_let_exactly_one_through(store: Store) -> None:
    memory = create(store)
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(n: int) -> None:
        barrier.wait()
        try:
            store.memory_admin.revise(
                memory["id"], {"body_md": f"writer {n}", "expected_revision": 1}, actor="a"
            )
            outcomes.append("ok")
        except Conflict as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["memory_revision_conflict"] * 7 + ["ok"]
    assert [r["revision"] for r in store.memory_admin.revisions(memory["id"])["items"]] == [1, 2]


def test_fix_diff_is_a_real_unified_diff(store: Store) -> None:
    """The seed echoed the labels and the current body and always said ``changed: true``."""
    memory = create(store, body_md="one\ntwo\nthree")
    store.memory_admin.revise(memory["id"], {"body_md": "one\nTWO\nthree", "expected_revision": 1}, actor="a")
    store.memory_admin.revise(
        memory["id"], {"body_md": "one\nTWO\nthree", "title": "Renamed", "expected_revision": 2}, actor="a"
    )
    diff = store.memory_admin.diff(memory["id"], "1", "2")
    assert (diff["from"], diff["to"], diff["changed"]) == (1, 2, True)
    assert diff["body_changed"] and not diff["title_changed"]
    assert "-two\n+TWO\n" in diff["diff"]
    assert f"--- a/{memory['id']}@r1/body_md" in diff["diff"]
    latest = store.memory_admin.diff(memory["id"], "2", "latest")
    assert latest["to"] == 3
    assert latest["title_changed"] and not latest["body_changed"]
    assert "-Use SQLite\n+Renamed\n" in latest["diff"]
    same = store.memory_admin.diff(memory["id"], "2", "2")
    assert same["changed"] is False
    assert same["diff"] == ""
    for label in ("9", "0", "abc", "-1", "latest!"):
        with pytest.raises(NotFound) as caught:
            store.memory_admin.diff(memory["id"], label, "latest")
        assert caught.value.code == "revision_not_found"


# -- aliases, source chains, merges --------------------------------------------------------------


def insert_alias(store: Store, alias: str, canonical: str) -> None:
    store.db.write(
        lambda conn: conn.execute(
            "INSERT INTO memory_aliases (alias_id, canonical_id, reason, actor, created_at)"
            " VALUES (?, ?, 'legacy', 'test', '2020-01-01T00:00:00Z')",
            (alias, canonical),
        )
    )


def test_fix_graph_resolves_the_canonical_chain_and_detects_cycles(store: Store) -> None:
    """The seed listed direct rows only: no chain, no cycle detection."""
    a, b, c = (create(store, title=t)["id"] for t in "abc")
    insert_alias(store, a, b)
    insert_alias(store, b, c)
    graph = store.memory_admin.graph(a)
    assert graph["canonical_chain"] == [a, b, c]
    assert graph["canonical_id"] == c
    assert graph["cycle"] is False
    assert store.memory_admin.graph(c)["aliased_from"] == [b, a]
    followed = store.memory_admin.get(a, follow_aliases=True)
    assert followed["memory"]["id"] == c
    assert followed["resolved"] is True
    insert_alias(store, c, a)
    looped = store.memory_admin.graph(a)
    assert looped["cycle"] is True
    assert looped["canonical_id"] is None
    with pytest.raises(Conflict) as caught:
        store.memory_admin.get(a, follow_aliases=True)
    assert caught.value.code == "memory_alias_cycle"


def test_fix_source_chain_follows_memory_sources_and_marks_missing(store: Store) -> None:
    """The seed returned direct edges only, without checking that sources exist."""
    root = create(store, title="root")
    middle = create(store, title="middle", provenance={"sources": [{"type": "memory", "id": root["id"]}]})
    top = create(
        store,
        title="top",
        provenance={
            "sources": [
                {"type": "memory", "id": middle["id"]},
                {"type": "memory", "id": "M-gone"},
                {"type": "proposal", "id": "P-gone"},
                {"type": "url", "id": "https://example.com"},
            ]
        },
    )
    shallow = store.memory_admin.source_chain(top["id"], depth=1)["items"]
    assert "sources" not in shallow[0]
    assert [(e["source_id"], e["missing"]) for e in shallow] == [
        (middle["id"], False),
        ("M-gone", True),
        ("P-gone", True),
        ("https://example.com", False),
    ]
    assert shallow[3]["exists"] is None  # a kind of source the project does not store
    deep = store.memory_admin.source_chain(top["id"], depth=3)["items"]
    assert deep[0]["sources"][0]["source_id"] == root["id"]
    assert deep[0]["sources"][0]["source"]["title"] == "root"
    with pytest.raises(InvalidArgument):
        store.memory_admin.source_chain(top["id"], depth=0)


def test_fix_merge_writes_revision_one_edges_and_aliases(store: Store) -> None:
    source = create(store, title="source", body_md="S body", confidence=0.2, importance=10)
    target = create(store, title="target", body_md="T body", confidence=0.6, importance=90, tags=["x"])
    answer = store.memory_admin.merge(source["id"], target["id"], actor="alice").body
    merged = answer["memory"]
    assert merged["id"].startswith("M-merge-")
    assert (merged["title"], merged["importance"], merged["tags"]) == ("target", 90, ["x"])
    assert merged["body_md"] == "T body\n\nS body"
    assert merged["confidence"] == pytest.approx(0.4)
    assert merged["revision"] == 1
    assert [m["status"] for m in answer["merged"]] == ["merged", "merged"]
    assert [r["revision"] for r in store.memory_admin.revisions(merged["id"])["items"]] == [1]
    edges = store.memory_admin.source_chain(merged["id"])["items"]
    assert {e["source_id"] for e in edges} == {source["id"], target["id"]}
    for old in (source["id"], target["id"]):
        assert store.memory_admin.get(old, follow_aliases=True)["memory"]["id"] == merged["id"]
    with pytest.raises(Conflict) as again:
        store.memory_admin.merge(source["id"], merged["id"], actor="alice")
    assert again.value.code == "memory_merge_conflict"
    with pytest.raises(Conflict) as itself:
        store.memory_admin.merge(merged["id"], merged["id"], actor="alice")
    assert itself.value.code == "memory_merge_conflict"
    with pytest.raises(NotFound) as unknown:
        store.memory_admin.merge(merged["id"], "M-none", actor="alice")
    assert unknown.value.code == "memory_target_not_found"


def test_fix_merge_refuses_inputs_whose_aliases_would_cycle(store: Store) -> None:
    a, b = create(store, title="a")["id"], create(store, title="b")["id"]
    insert_alias(store, b, a)  # legacy data: b already points at a, though b is still active
    before = counts(store)
    with pytest.raises(Conflict) as caught:
        store.memory_admin.merge(a, b, actor="alice")
    assert caught.value.code == "memory_merge_conflict"
    assert counts(store) == before


def test_merge_legacy(store: Store) -> None:
    source, target = create(store, title="s")["id"], create(store, title="t")["id"]
    answer = store.memory_admin.merge_legacy(source, f" {target} ", actor="alice").body
    assert answer["memory"]["status"] == "merged"
    assert answer["memory"]["provenance"]["merged_into"] == target
    with pytest.raises(NotFound) as missing:
        store.memory_admin.merge_legacy(target, "M-none", actor="alice")
    assert missing.value.code == "memory_target_not_found"
    with pytest.raises(Conflict):
        store.memory_admin.merge_legacy(source, target, actor="alice")


# -- state actions -------------------------------------------------------------------------------


def test_fix_state_actions_follow_the_permitted_prior_state_table(store: Store) -> None:
    """The seed restored any status (merged included) and allowed repeated actions."""
    memory_id = create(store)["id"]
    admin = store.memory_admin

    def act(action: str) -> dict[str, Any]:
        result: dict[str, Any] = admin.act(memory_id, action, actor="alice").body["memory"]
        return result

    def refused(action: str) -> None:
        before = counts(store)
        with pytest.raises(Conflict) as caught:
            admin.act(memory_id, action, actor="alice")
        assert caught.value.code == "memory_update_conflict"
        assert counts(store) == before

    refused("unpin")
    refused("restore")
    assert act("pin")["pinned"] is True
    refused("pin")
    assert act("unpin")["pinned"] is False
    store.memory.mark_stale(memory_id=memory_id, reason_md="superseded", actor="alice")
    archived = act("archive")
    assert (archived["status"], archived["archived_at"] is not None) == ("archived", True)
    refused("archive")
    refused("pin")
    restored = act("restore")
    assert (restored["status"], restored["archived_at"]) == ("stale", None)  # its status before archiving
    other = create(store)["id"]
    admin.merge(memory_id, other, actor="alice")
    refused("restore")  # a merged entry is not revived
    refused("archive")
    with pytest.raises(InvalidArgument) as unknown:
        admin.act(memory_id, "explode", actor="alice")
    assert unknown.value.code == "invalid_memory_action"


# -- resynthesis ---------------------------------------------------------------------------------


def test_fix_resynthesis_requests_are_fulfilled(store: Store) -> None:
    """The seed set ``resynthesis_status: requested`` and nothing ever read it."""
    memory = create(store, body_md="Keep WAL.  \n\n\n\nKeep WAL.\n\nUse FULL sync.")
    answer = store.memory_admin.request_resynthesis(memory["id"], actor="alice", reason="tidy").body
    request_id = answer["request"]["id"]
    assert answer["request"]["status"] == "requested"
    assert answer["memory"]["resynthesis_status"] == "requested"
    with pytest.raises(Conflict) as twice:
        store.memory_admin.request_resynthesis(memory["id"], actor="alice")
    assert twice.value.code == "memory_resynthesis_conflict"
    assert store.memory_admin.pending_resynthesis() == [request_id]
    done = store.memory_admin.fulfil_resynthesis(request_id, lexical_resynthesis, provider="lexical")
    assert (done["status"], done["result_revision"], done["provider"]) == ("completed", 2, "lexical")
    after = store.memory_admin.get(memory["id"])["memory"]
    assert after["body_md"] == "Keep WAL.\n\nUse FULL sync."
    assert after["resynthesis_status"] == "completed"
    assert store.memory_admin.revisions(memory["id"])["items"][-1]["reason"] == "resynthesized (lexical)"
    assert store.memory_admin.pending_resynthesis() == []
    with pytest.raises(Conflict):
        store.memory_admin.fulfil_resynthesis(request_id, lexical_resynthesis, provider="lexical")


def test_resynthesis_fails_when_the_provider_fails_or_the_entry_moved(store: Store) -> None:
    memory = create(store)

    def broken(entry: dict[str, Any], history: list[dict[str, Any]]) -> str:
        raise RuntimeError("model unavailable")

    first = store.memory_admin.request_resynthesis(memory["id"], actor="alice").body["request"]["id"]
    failed = store.memory_admin.fulfil_resynthesis(first, broken, provider="openai")
    assert failed["status"] == "failed"
    assert "model unavailable" in failed["error"]
    assert store.memory_admin.get(memory["id"])["memory"]["resynthesis_status"] == "failed"

    second = store.memory_admin.request_resynthesis(memory["id"], actor="alice").body["request"]["id"]

    def racing(entry: dict[str, Any], history: list[dict[str, Any]]) -> str:
        store.memory_admin.revise(memory["id"], {"body_md": "moved on", "expected_revision": 1}, actor="bob")
        return "synthesized"

    moved = store.memory_admin.fulfil_resynthesis(second, racing, provider="lexical")
    assert moved["status"] == "failed"
    assert "changed" in moved["error"]
    assert store.memory_admin.get(memory["id"])["memory"]["body_md"] == "moved on"


# -- atomicity and idempotency -------------------------------------------------------------------


def test_every_mutation_writes_its_event_and_audit_row_together(store: Store) -> None:
    a, b = create(store)["id"], create(store)["id"]
    admin = store.memory_admin
    admin.revise(a, {"body_md": "new", "expected_revision": 1}, actor="alice")
    admin.act(a, "pin", actor="alice")
    admin.request_resynthesis(a, actor="alice")
    admin.merge(a, b, actor="alice")
    c = create(store)["id"]
    admin.merge_legacy(c, b, actor="alice")

    def read(conn: sqlite3.Connection) -> list[sqlite3.Row]:
        return conn.execute(
            "SELECT a.action, e.type FROM audit_log a LEFT JOIN events e ON e.id = a.event_id ORDER BY a.id"
        ).fetchall()

    rows = store.db.read(read)
    assert [tuple(r) for r in rows] == [
        ("memory.created", "memory.recorded"),
        ("memory.created", "memory.recorded"),
        ("memory.revised", "memory.revised"),
        ("memory.pin", "memory.pinned"),
        ("memory.resynthesis_requested", "memory.resynthesis_requested"),
        ("memory.merged", "memory.merged"),
        ("memory.created", "memory.recorded"),
        ("memory.merged_legacy", "memory.merged_legacy"),
    ]


def test_a_failing_audit_write_rolls_back_the_change_and_its_event(store: Store) -> None:
    memory_id = create(store)["id"]
    store.db.write(
        lambda conn: conn.execute(
            "CREATE TEMP TRIGGER fail_audit BEFORE INSERT ON audit_log"
            " BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    )
    before = counts(store)
    with pytest.raises(Conflict):  # SQLite's ABORT, translated at the store boundary
        store.memory_admin.act(memory_id, "pin", actor="alice")
    assert counts(store) == before
    assert store.memory_admin.get(memory_id)["memory"]["pinned"] is False


def test_idempotency_claims_replay_and_conflict(store: Store) -> None:
    claim = IdempotencyClaim(actor="alice", key="k1", route="POST /memories", request_sha256="h1")
    body = {"scope": "project", "kind": "fact", "title": "t", "body_md": "b"}
    first = store.memory_admin.create(body, actor="alice", claim=claim)
    before = counts(store)
    again = store.memory_admin.create(body, actor="alice", claim=claim)
    assert again == Committed(first.body, 201, replayed=True)
    assert counts(store) == before
    with pytest.raises(Conflict) as caught:
        store.memory_admin.create(
            body, actor="alice", claim=IdempotencyClaim("alice", "k1", "POST /memories", "h2")
        )
    assert caught.value.code == "conflict"
    # Keys are per actor: bob's k1 is another key.
    assert not store.memory_admin.create(
        body, actor="bob", claim=IdempotencyClaim("bob", "k1", "POST /memories", "h2")
    ).replayed
