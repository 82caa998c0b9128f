"""A launch whose provider failed: the noted cause wins over the container's exit status, the first
note stays, and the ``role.failed`` event carries the reason and the error."""

from __future__ import annotations

import pytest

from store import Conflict, InvalidArgument, Store, list_events
from store.launches import PROVIDER_FAILED, PROVIDER_FAILED_EXIT, Launch, LaunchStatus


def _running(store: Store) -> Launch:
    launch = store.launches.request(
        role="memory_oracle", agent_id="memory-oracle-1", proposal_id="P-1", image="roundtable-role:0.1.0"
    )
    store.launches.mark_starting(launch.id, f"c-{launch.id}")
    return store.launches.mark_running(launch.id)


def _last_event(store: Store) -> tuple[str, dict[str, object]]:
    event = store.db.read(lambda conn: list_events(conn, limit=1000))[-1]
    return event.type, event.payload


@pytest.mark.parametrize(
    ("status", "exit_code"), [(LaunchStatus.EXITED, 0), (LaunchStatus.FAILED, PROVIDER_FAILED_EXIT)]
)
def test_a_noted_failure_ends_the_launch_failed_with_its_reason(
    store: Store, status: LaunchStatus, exit_code: int
) -> None:
    launch = _running(store)
    store.launches.note_failure(launch.id, "model_unavailable", "the model server at http://x is unreachable")
    reason = None if status is LaunchStatus.EXITED else "nonzero_exit"
    done = store.launches.finish(launch.id, status, exit_code=exit_code, reason=reason)
    assert done.status is LaunchStatus.FAILED
    assert (done.reason, done.error) == ("model_unavailable", "the model server at http://x is unreachable")
    assert done.exit_code == exit_code
    assert done.to_dict()["reason"] == "model_unavailable"
    kind, payload = _last_event(store)
    assert kind == "role.failed"
    assert payload["status"] == "failed"
    assert payload["reason"] == "model_unavailable"
    assert payload["error"] == "the model server at http://x is unreachable"


def test_the_first_note_wins(store: Store) -> None:
    launch = _running(store)
    store.launches.note_failure(launch.id, "model_error", "answered 500")
    noted = store.launches.note_failure(launch.id, "budget_exhausted", "spent")
    assert (noted.status, noted.reason, noted.error) == (LaunchStatus.RUNNING, "model_error", "answered 500")
    done = store.launches.finish(launch.id, LaunchStatus.EXITED, exit_code=0)
    assert (done.reason, done.error) == ("model_error", "answered 500")


def test_a_provider_failed_exit_without_a_note_gets_the_generic_reason(store: Store) -> None:
    launch = _running(store)
    done = store.launches.finish(
        launch.id, LaunchStatus.FAILED, exit_code=PROVIDER_FAILED_EXIT, reason="nonzero_exit"
    )
    assert (done.status, done.reason) == (LaunchStatus.FAILED, PROVIDER_FAILED)
    assert done.error is not None and "provider failed" in done.error
    other = _running(store)
    crashed = store.launches.finish(other.id, LaunchStatus.FAILED, exit_code=1, reason="nonzero_exit")
    assert (crashed.reason, crashed.error) == ("nonzero_exit", None)


@pytest.mark.parametrize("status", [LaunchStatus.TIMEOUT, LaunchStatus.CANCELLED])
def test_a_deadline_or_cancellation_keeps_its_own_status_and_reason(
    store: Store, status: LaunchStatus
) -> None:
    launch = _running(store)
    store.launches.note_failure(launch.id, "budget_exhausted", "spent")
    done = store.launches.finish(launch.id, status, reason="deadline_exceeded")
    assert (done.status, done.reason, done.error) == (status, "deadline_exceeded", None)


def test_a_note_on_an_ended_launch_or_with_a_bad_reason_is_refused(store: Store) -> None:
    launch = _running(store)
    with pytest.raises(InvalidArgument):
        store.launches.note_failure(launch.id, "not a label!", "x")
    store.launches.finish(launch.id, LaunchStatus.EXITED, exit_code=0)
    with pytest.raises(Conflict):
        store.launches.note_failure(launch.id, "model_error", "too late")
    assert store.launches.get(launch.id).status is LaunchStatus.EXITED


def test_an_ordinary_end_carries_no_error(store: Store) -> None:
    launch = _running(store)
    done = store.launches.finish(launch.id, LaunchStatus.EXITED, exit_code=0)
    assert (done.status, done.reason, done.error) == (LaunchStatus.EXITED, None, None)
    kind, payload = _last_event(store)
    assert kind == "role.exited"
    assert payload == {
        "launch_id": launch.id,
        "role": "memory_oracle",
        "status": "exited",
        "exit_code": 0,
        "reason": None,
        "error": None,
    }


def test_a_refused_grant_after_the_proposal_closed_ends_proposal_closed(store: Store) -> None:
    from roles.channel import EXIT_NO_GRANT
    from store.launches import NO_GRANT_EXIT, PROPOSAL_CLOSED
    from tests.store.work_helpers import DIFF, mint_oracle_grant, new_task

    assert EXIT_NO_GRANT == NO_GRANT_EXIT
    proposal, _ = store.proposals.create(
        task_id=new_task(store).id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    launch = store.launches.request(
        role="memory_oracle",
        agent_id="memory-oracle-1",
        proposal_id=proposal["id"],
        image="roundtable-role:1",
    )
    grant = mint_oracle_grant(store, proposal["id"]).record
    store.grants.bind_launch(grant.id, launch.id, actor="op")
    store.decisions.reject(proposal_id=proposal["id"], reason_md="no", actor="op")  # revokes the grant
    ended = store.launches.finish(
        launch.id, LaunchStatus.FAILED, exit_code=NO_GRANT_EXIT, reason="nonzero_exit"
    )
    assert ended.reason == PROPOSAL_CLOSED
    assert ended.error is not None and "proposal rejected" in ended.error
    # Without the proposal closing, a refused grant is what it was.
    other = store.launches.request(
        role="memory_oracle",
        agent_id="memory-oracle-1",
        proposal_id=proposal["id"],
        image="roundtable-role:1",
    )
    plain = store.launches.finish(
        other.id, LaunchStatus.FAILED, exit_code=NO_GRANT_EXIT, reason="nonzero_exit"
    )
    assert plain.reason == "nonzero_exit"
