"""Who may replace a memory entry: its writer, as the store recorded it from the credential.

Two holes an adversarial review found are pinned here: ownership decided from the caller-settable
``source_proposal_id`` (an oracle could overwrite an operator's decision created with that field
set), and a capability's full replacement resetting an operator's lifecycle state.
"""

from __future__ import annotations

from typing import Any

import pytest

from store import Forbidden, Store
from store.memory import MemoryEntry, MemoryWriter
from tests.store.work_helpers import DIFF, mint_oracle_grant, new_task


def _proposal(store: Store) -> str:
    proposal, _ = store.proposals.create(
        task_id=new_task(store).id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    return str(proposal["id"])


def _as_grant(store: Store, proposal_id: str, **fields: Any) -> MemoryEntry:
    """``memory.record`` as the MemoryOracle tool calls it, through a fresh grant on ``proposal_id``."""
    grant = mint_oracle_grant(store, proposal_id, "memory.record").record
    values: dict[str, Any] = {"scope": "project", "kind": "fact", "title": "t", "body_md": "b"}
    values.update(fields)
    return store.memory.record(
        **values,
        actor=grant.agent_id,
        writer=MemoryWriter.grant(grant.id),
        source_proposal_id=grant.proposal_id,
        allowed_scopes=grant.scopes,
        grant_id=grant.id,
    )


def _count(store: Store) -> int:
    return int(
        store.db.read(
            lambda conn: conn.execute("SELECT COUNT(*) FROM events WHERE type LIKE 'memory.%'").fetchone()[0]
        )
    )


def test_an_operator_entry_naming_a_proposal_is_not_that_proposals_to_replace(store: Store) -> None:
    proposal_id = _proposal(store)
    # POST /memories lets an operator set source_proposal_id; it must confer no ownership.
    created = store.memory_admin.create(
        {
            "scope": "project",
            "kind": "decision",
            "title": "Keep the v1 API",
            "body_md": "Decided by the maintainers.",
            "source_proposal_id": proposal_id,
        },
        actor="op",
    ).body["memory"]
    before = store.memory.get(created["id"])
    events = _count(store)
    with pytest.raises(Forbidden, match="written by someone else"):
        _as_grant(
            store, proposal_id, memory_id=created["id"], title="Drop the v1 API", body_md="Oracle says so"
        )
    assert store.memory.get(created["id"]) == before
    assert _count(store) == events


def test_a_proposals_grants_share_its_entries_and_no_other_proposal_does(store: Store) -> None:
    mine, other = _proposal(store), _proposal(store)
    entry = _as_grant(store, mine, scope="project", title="note")
    assert entry.revision == 1
    again = _as_grant(store, mine, memory_id=entry.id, title="note, revised")  # a second grant, same P
    assert again.revision == 2
    with pytest.raises(Forbidden):
        _as_grant(store, other, memory_id=entry.id, title="hijacked")
    assert store.memory.get(entry.id).title == "note, revised"


@pytest.mark.parametrize("curation", ["stale", "archive"])
def test_a_capability_replacement_keeps_the_operators_lifecycle_state(store: Store, curation: str) -> None:
    proposal_id = _proposal(store)
    entry = _as_grant(store, proposal_id, scope="project", title="note")
    if curation == "stale":
        store.memory.mark_stale(memory_id=entry.id, reason_md="superseded", actor="op")
    else:
        store.memory_admin.act(entry.id, "archive", actor="op")
    status = store.memory.get(entry.id).status
    assert status != "active"
    replaced = _as_grant(store, proposal_id, memory_id=entry.id, title="note, again")
    assert replaced.status == status  # the stale mark or the archive stands
    events = _count(store)
    with pytest.raises(Forbidden, match="lifecycle"):
        _as_grant(store, proposal_id, memory_id=entry.id, status="active")
    assert store.memory.get(entry.id).status == status
    assert _count(store) == events


def test_only_curators_create_entries_in_another_state(store: Store) -> None:
    proposal_id = _proposal(store)
    with pytest.raises(Forbidden, match="lifecycle"):
        _as_grant(store, proposal_id, status="stale")
    agent = MemoryWriter.agent("implementer-1")
    with pytest.raises(Forbidden, match="lifecycle"):
        store.memory.record(scope="project", kind="fact", title="t", body_md="b", status="archived",
                            actor="implementer-1", writer=agent)  # fmt: skip
    stale = store.memory.record(
        scope="project", kind="fact", title="t", body_md="b", status="stale", actor="op"
    )
    assert stale.status == "stale"


def test_an_agent_replaces_only_what_it_wrote(store: Store) -> None:
    me, other = MemoryWriter.agent("implementer-1"), MemoryWriter.agent("implementer-2")

    def record(writer: MemoryWriter, **fields: Any) -> MemoryEntry:
        values: dict[str, Any] = {"scope": "project", "kind": "fact", "title": "t", "body_md": "b"}
        values.update(fields)
        return store.memory.record(**values, actor=writer.key.removeprefix("agent:"), writer=writer)

    mine = record(me, title="mine")
    assert record(me, memory_id=mine.id, title="still mine").revision == 2
    with pytest.raises(Forbidden):
        record(other, memory_id=mine.id, title="theirs now")
    operator_entry = store.memory.record(scope="project", kind="decision", title="d", body_md="b", actor="op")
    with pytest.raises(Forbidden):
        record(me, memory_id=operator_entry.id, title="rewritten")
    # Operators curate: they replace anyone's entry.
    assert store.memory.record(memory_id=mine.id, scope="project", kind="fact", title="curated",
                               body_md="b", actor="op").title == "curated"  # fmt: skip
    assert store.memory.may_replace(mine.id, me) and not store.memory.may_replace(mine.id, other)
    assert store.memory.may_replace("M-none", other)  # no such entry: creating it is allowed


def test_the_writer_is_stored_from_the_credential(store: Store) -> None:
    proposal_id = _proposal(store)
    entry = _as_grant(store, proposal_id)
    agent = store.memory.record(
        scope="project",
        kind="fact",
        title="t",
        body_md="b",
        actor="reviewer-1",
        writer=MemoryWriter.agent("reviewer-1"),
    )
    operator = store.memory.record(scope="project", kind="fact", title="t", body_md="b", actor="op")

    def written_by(memory_id: str) -> str:
        row = store.db.read(
            lambda conn: conn.execute(
                "SELECT written_by FROM memory_entries WHERE id = ?", (memory_id,)
            ).fetchone()
        )
        return str(row[0])

    assert written_by(entry.id).startswith("grant:C-")
    assert written_by(agent.id) == "agent:reviewer-1"
    assert written_by(operator.id) == "operator:op"
