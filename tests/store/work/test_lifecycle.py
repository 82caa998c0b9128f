"""The lifecycle vocabularies: each closed set of proposal statuses is the one every refusal uses,
and integer arguments beyond SQLite's range are refused as arguments, not failed as internals."""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import pytest

from store import Store
from store._text import INT64_MAX, INT64_MIN, check_int
from store.errors import Conflict, InvalidArgument
from store.work import ProposalStatus, Vote
from store.work._vocabulary import check_choice
from supervisor import Supervisor
from supervisor.docker import Launcher
from tests.store.work_helpers import DIFF, DIFF_V2, mint_oracle_grant, new_task, seed_files

STATUSES = list(ProposalStatus)


class _Reached(Exception):
    """Raised where a launch would be recorded: the supervisor let the proposal through."""


def _proposal_in(store: Store, status: ProposalStatus) -> str:
    """A proposal with patch version 1, moved straight to ``status`` in its row."""
    seed_files(store.paths.root)
    task = new_task(store)
    view, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    proposal_id = str(view["id"])

    def move(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE proposals SET status = ? WHERE id = ?", (status, proposal_id))

    store.db.write(move)
    return proposal_id


def _grant_refused(store: Store, proposal_id: str) -> bool:
    try:
        mint_oracle_grant(store, proposal_id, "task.history")
    except Conflict:
        return True
    return False


async def _launch_refused(store: Store, proposal_id: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    def reached(**_: Any) -> None:
        raise _Reached

    monkeypatch.setattr(store.launches, "request", reached)
    supervisor = Supervisor(store, launcher=cast(Launcher, object()))
    try:
        await supervisor.launch_role("memory_oracle", proposal_id)
    except Conflict:
        return True
    except _Reached:
        return False
    raise AssertionError("launch_role neither refused nor tried to record the launch")


@pytest.mark.anyio
@pytest.mark.parametrize("status", STATUSES, ids=str)
async def test_grants_and_launches_refuse_exactly_the_closed_to_launches_set(
    store: Store, status: ProposalStatus, monkeypatch: pytest.MonkeyPatch
) -> None:
    proposal_id = _proposal_in(store, status)
    closed = status in ProposalStatus.CLOSED_TO_LAUNCHES
    assert _grant_refused(store, proposal_id) is closed
    assert await _launch_refused(store, proposal_id, monkeypatch) is closed


@pytest.mark.parametrize("status", STATUSES, ids=str)
def test_new_versions_and_closing_decisions_refuse_exactly_the_terminal_set(
    store: Store, status: ProposalStatus
) -> None:
    proposal_id = _proposal_in(store, status)
    terminal = status in ProposalStatus.TERMINAL
    outcomes = []
    for attempt in (
        lambda: store.proposals.attach_patch(proposal_id=proposal_id, patch=DIFF_V2, actor="op"),
        lambda: store.decisions.record(
            outcome="withdrawn", rationale_md="gone", proposal_id=proposal_id, actor="op"
        ),
    ):
        try:
            attempt()
            outcomes.append(False)
        except Conflict:
            outcomes.append(True)
    assert outcomes == [terminal, terminal]


def test_the_closed_sets_nest_and_accepted_alone_may_return_to_review() -> None:
    assert ProposalStatus.TERMINAL < ProposalStatus.CLOSED_TO_LAUNCHES
    assert {ProposalStatus.ACCEPTED} == ProposalStatus.CLOSED_TO_LAUNCHES - ProposalStatus.TERMINAL
    assert ProposalStatus.PENDING not in ProposalStatus.CLOSED_TO_LAUNCHES
    assert not Vote.APPROVING & Vote.BLOCKING


def test_check_choice_answers_the_member_and_names_the_choices() -> None:
    assert check_choice("vote", "veto", Vote) is Vote.VETO
    for bad in ("VETO", "", None, 3, ["veto"]):
        with pytest.raises(InvalidArgument, match="approve, approve_with_notes, revise"):
            check_choice("vote", bad, Vote)


def test_check_int_holds_to_the_sqlite_range() -> None:
    assert check_int("n", INT64_MAX) == INT64_MAX and check_int("n", INT64_MIN) == INT64_MIN
    for bad in (2**63, -(2**63) - 1, True, 1.0, "1", None):
        with pytest.raises(InvalidArgument):
            check_int("n", bad)
    with pytest.raises(InvalidArgument):
        check_int("n", 0, minimum=1)


@pytest.mark.parametrize("huge", [2**63, 2**64 + 5])
def test_integers_beyond_sqlite_are_invalid_arguments(store: Store, huge: int) -> None:
    proposal_id = _proposal_in(store, ProposalStatus.PENDING)
    with pytest.raises(InvalidArgument):
        store.reviews.list(proposal_id=proposal_id, patch_version=huge)
    with pytest.raises(InvalidArgument):
        store.workspace.validate(proposal_id=proposal_id, version=huge)
    with pytest.raises(InvalidArgument):
        store.proposals.list(limit=huge)
