"""The supervisor's own bookkeeping around a launch, with a probing launcher in place of Docker:
a launch that fails before its container runs is recorded and cleaned up, and the model gateway
exists only on launches that use a model."""

from __future__ import annotations

import errno
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from store import LaunchFailed, Store
from store.launches._store import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.docker._launcher import PhaseHook
from supervisor.docker._reaper import OrphanHook, ReapReport
from supervisor.launch._runtime_dir import LaunchRuntimeDir, RuntimeRoot
from supervisor.launch._spec import ContainerOutcome, LaunchSpec
from supervisor.models._gateway import GATEWAY_PATH
from tests.capabilities.oracle_helpers import DIFF

pytestmark = pytest.mark.anyio


@dataclass
class ProbingLauncher:
    """Stands in for Docker: calls the gateway route over the launch socket, then ends the launch."""

    store: Store
    gateway_status: list[int] = field(default_factory=list)

    async def run(
        self, spec: LaunchSpec, *, on_phase: PhaseHook | None = None, claimed: Any = None, spawn: Any = None
    ) -> ContainerOutcome:
        assert spec.runtime_dir is not None
        token = (spec.runtime_dir / "token").read_text()
        transport = httpx2.AsyncHTTPTransport(uds=str(spec.runtime_dir / "mcp.sock"))
        async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as client:
            response = await client.post(
                GATEWAY_PATH, json={"messages": []}, headers={"Authorization": f"Bearer {token}"}
            )
        self.gateway_status.append(response.status_code)
        container_id = spec.launch_id.encode().hex()[:64]
        self.store.launches.mark_starting(spec.launch_id, container_id)
        self.store.launches.mark_running(spec.launch_id)
        self.store.launches.finish(spec.launch_id, LaunchStatus.EXITED, exit_code=0)
        return ContainerOutcome(
            launch_id=spec.launch_id,
            status=LaunchStatus.EXITED,
            exit_code=0,
            reason=None,
            oom_killed=False,
            container_id="c" * 64,
            log_tail="",
            seconds=0.0,
            warnings=(),
        )

    async def reap(self, *, on_orphan: OrphanHook | None = None, keep: Collection[str] = ()) -> ReapReport:
        return ReapReport(failed_launches=(), removed_containers=(), removed_runtime_dirs=(), warnings=())


class FullDiskRuntime(RuntimeRoot):
    """A runtime root whose disk is full."""

    def create(self, launch_id: str) -> LaunchRuntimeDir:
        raise OSError(errno.ENOSPC, "No space left on device")


def _proposal(store: Store) -> str:
    task = store.tasks.create(title="t", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="p", patch=DIFF, actor="implementer-1"
    )
    return str(proposal["id"])


async def test_the_gateway_exists_only_for_openai_launches(store: Store, tmp_path: Path) -> None:
    launcher = ProbingLauncher(store)
    runtime = RuntimeRoot("rtprobe", base=Path("/tmp") / f"rtp-{tmp_path.name[-8:]}")
    proposal_id = _proposal(store)
    async with Supervisor(store, launcher=launcher, runtime=runtime) as supervisor:
        lexical = await supervisor.launch_role("memory_oracle", proposal_id, provider="lexical")
        openai = await supervisor.launch_role("memory_oracle", proposal_id, provider="openai")
    assert (lexical.launch.status, openai.launch.status) == (LaunchStatus.EXITED, LaunchStatus.EXITED)
    # lexical: no such route (404); openai: the route answers (502: no model server is configured).
    assert launcher.gateway_status == [404, 502]
    # The supervisor that ended left no directory behind: neither its runtime directory nor its
    # owner lock's (each project's supervisor had left two empty ones in /tmp/rt-<uid> for good).
    assert not runtime.path.exists()
    assert list((runtime.base / "owners").iterdir()) == []


async def test_a_launch_that_fails_before_its_container_is_recorded_and_cleaned_up(
    store: Store, tmp_path: Path
) -> None:
    runtime = FullDiskRuntime("rtfull", base=Path("/tmp") / f"rtf-{tmp_path.name[-8:]}")
    proposal_id = _proposal(store)
    async with Supervisor(store, launcher=ProbingLauncher(store), runtime=runtime) as supervisor:
        with pytest.raises(LaunchFailed, match="No space left"):
            await supervisor.launch_role("memory_oracle", proposal_id)
    (launch,) = store.launches.find(proposal_id=proposal_id)
    assert launch.status is LaunchStatus.FAILED
    assert launch.reason == "prepare_failed"
    grants = store.grants.list_grants(proposal_id=proposal_id)
    assert grants
    assert all(grant.revoked_at for grant in grants)
