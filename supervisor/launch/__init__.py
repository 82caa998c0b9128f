"""What a launch is and what it holds: its spec and limits, its runtime directory, its owner's lock.

The :class:`supervisor.Supervisor` drives launches through a launcher (:mod:`supervisor.docker`)
and cleans up after dead ones with the reaper; both build on this package.
"""

from __future__ import annotations

from supervisor.launch._client_config import (
    MCP_CONFIG_FILE,
    MCP_SERVER_NAME,
    client_environment,
    mcp_client_config,
)
from supervisor.launch._ownership import OwnerLock, live_owners
from supervisor.launch._plan import LaunchPlan, oracle_plan
from supervisor.launch._progress import PhaseReporter, report_phase
from supervisor.launch._result import LaunchResult, unwrap_error
from supervisor.launch._runtime_dir import CONTAINER_MOUNT, LaunchRuntimeDir, RuntimeRoot
from supervisor.launch._socket import launch_socket
from supervisor.launch._spec import (
    DEFAULT_CPU_SHARES,
    LABEL_LAUNCH,
    LABEL_POOL,
    LABEL_SUPERVISOR,
    ROLE_PYTHON,
    ContainerOutcome,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
    container_kwargs,
    container_name,
    supervisor_id_for,
)

__all__ = [
    "CONTAINER_MOUNT",
    "DEFAULT_CPU_SHARES",
    "LABEL_LAUNCH",
    "LABEL_POOL",
    "LABEL_SUPERVISOR",
    "MCP_CONFIG_FILE",
    "MCP_SERVER_NAME",
    "ROLE_PYTHON",
    "ContainerOutcome",
    "LaunchLimits",
    "LaunchPhase",
    "LaunchPlan",
    "LaunchResult",
    "LaunchRuntimeDir",
    "LaunchSpec",
    "OwnerLock",
    "PhaseReporter",
    "RuntimeRoot",
    "client_environment",
    "container_kwargs",
    "container_name",
    "launch_socket",
    "live_owners",
    "mcp_client_config",
    "oracle_plan",
    "report_phase",
    "supervisor_id_for",
    "unwrap_error",
]
