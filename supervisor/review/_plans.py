"""Launch plans for the reviewers a round runs: ``[launches."<agent id>"]`` made concrete.

Each launched reviewer gets a capability for its own agent and launch role (``reviewer`` or
``security``, from its roster role), bound to the proposal, and a container whose inputs depend on
its kind:

- ``test``: the embedded test reviewer (``python -m roles.test_reviewer``). The tree under review
  (the files git tracks at ``HEAD`` with the current patch version applied,
  :func:`~supervisor.review._workspace.stage_review_workspace`) and its manifest are written into
  the runtime directory, read-only inside the container; ``.roundtable/`` and anything git does not
  track never enter it.
- ``mcp``: your own MCP agent in its own image, handed the standard client configuration
  (``mcp.json``, an ``mcpServers`` entry for the stdio bridge to its launch socket) and the
  environment naming it (:mod:`supervisor.launch._client_config`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio

from capabilities.policy import LAUNCH_ROLE_OF
from store import Store
from store.config import ReviewerKind
from store.errors import InvalidArgument
from supervisor.launch import (
    CONTAINER_MOUNT,
    MCP_CONFIG_FILE,
    ROLE_PYTHON,
    LaunchLimits,
    LaunchPlan,
    client_environment,
    mcp_client_config,
)
from supervisor.review._workspace import REVIEW_MANIFEST, WORKSPACE_TAR, stage_review_workspace

__all__ = ["TEST_MARGIN_SECONDS", "reviewer_plan"]

TEST_MARGIN_SECONDS = 15.0
"""How much sooner than the container's deadline the test command is stopped, so the reviewer
can still vote (``revise``, timed out) before the container is killed."""


async def reviewer_plan(store: Store, agent_id: str, proposal: dict[str, Any]) -> LaunchPlan:
    """The plan of roster agent ``agent_id``'s launch for ``proposal`` (an open one, with a patch)."""
    config = store.config.launches.get(agent_id)
    if config is None:
        raise InvalidArgument(f"agent {agent_id!r} has no [launches.{agent_id!r}] section in config.toml")
    role = LAUNCH_ROLE_OF[store.config.agents[agent_id]]
    proposal_id = str(proposal["id"])
    environment = {
        "ROUNDTABLE_CHANNEL_DIR": CONTAINER_MOUNT,
        "ROUNDTABLE_PROPOSAL_ID": proposal_id,
        "ROUNDTABLE_AGENT_ID": agent_id,
    }
    files: dict[str, bytes]
    if config.kind is ReviewerKind.TEST:
        version, patch = await store.db.run(store.proposals.patch, proposal_id)
        staged = await anyio.to_thread.run_sync(
            partial(
                stage_review_workspace,
                store.paths.root,
                patch,
                proposal_id=proposal_id,
                patch_version=version.version,
                patch_sha256=version.sha256,
                command=list(config.command),
                timeout_seconds=max(1.0, config.timeout_seconds - TEST_MARGIN_SECONDS),
            )
        )
        files = {WORKSPACE_TAR: staged.tar, REVIEW_MANIFEST: staged.manifest_json()}
        entrypoint: tuple[str, ...] | None = (ROLE_PYTHON, "-m", "roles.test_reviewer")
        command: tuple[str, ...] = ()
    else:
        files = {MCP_CONFIG_FILE: json.dumps(mcp_client_config(), indent=2).encode()}
        environment |= client_environment()
        entrypoint, command = None, tuple(config.command)
    return LaunchPlan(
        role=role,
        agent_id=agent_id,
        provider=str(config.kind),
        image=config.image,
        limits=LaunchLimits.from_role(config),
        deadline=float(config.timeout_seconds),
        command=command,
        entrypoint=entrypoint,
        environment=environment,
        files=files,
    )
