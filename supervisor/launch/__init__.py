"""What a launch is and what it holds: its spec and limits, its runtime directory, its owner's lock
or lease.

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
from supervisor.launch._ending import end_status, redacted_tail, tail_margin
from supervisor.launch._lease import OwnerLease
from supervisor.launch._ownership import OwnerLock, Ownership, live_owners, owner_for
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
    parse_memory,
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
    "OwnerLease",
    "OwnerLock",
    "Ownership",
    "PhaseReporter",
    "RuntimeRoot",
    "client_environment",
    "container_kwargs",
    "container_name",
    "end_status",
    "launch_socket",
    "live_owners",
    "mcp_client_config",
    "oracle_plan",
    "owner_for",
    "parse_memory",
    "redacted_tail",
    "report_phase",
    "supervisor_id_for",
    "tail_margin",
    "unwrap_error",
]
