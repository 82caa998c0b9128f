"""What a launch is and what it holds: its spec and limits, its runtime directory, its owner's lock
or lease.

The :class:`supervisor.Supervisor` drives launches through a launcher (:mod:`supervisor.docker`)
and cleans up after dead ones with the reaper; both build on this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import lazy_exports

if TYPE_CHECKING:
    from supervisor.launch._client_config import (
        MCP_CONFIG_FILE,
        MCP_SERVER_NAME,
        client_environment,
        mcp_client_config,
    )
    from supervisor.launch._ending import end_status, redacted_tail, tail_margin
    from supervisor.launch._lease import OwnerLease
    from supervisor.launch._ownership import (
        OwnerLock,
        Ownership,
        live_owners,
        owner_directory,
        owner_for,
    )
    from supervisor.launch._plan import LaunchPlan, oracle_plan
    from supervisor.launch._private_files import keep_newest, read_private, write_private
    from supervisor.launch._progress import PhaseReporter, report_phase
    from supervisor.launch._result import LaunchResult, unwrap_error
    from supervisor.launch._runtime_dir import (
        CONTAINER_GID,
        CONTAINER_MOUNT,
        CONTAINER_UID,
        LaunchRuntimeDir,
        RuntimeRoot,
        supervisor_id_for,
    )
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
    )

__all__ = [
    "CONTAINER_GID",
    "CONTAINER_MOUNT",
    "CONTAINER_UID",
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
    "keep_newest",
    "launch_socket",
    "live_owners",
    "mcp_client_config",
    "oracle_plan",
    "owner_directory",
    "owner_for",
    "parse_memory",
    "read_private",
    "redacted_tail",
    "report_phase",
    "supervisor_id_for",
    "tail_margin",
    "unwrap_error",
    "write_private",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
    "supervisor.launch._client_config": (
        "MCP_CONFIG_FILE",
        "MCP_SERVER_NAME",
        "client_environment",
        "mcp_client_config",
    ),
    "supervisor.launch._ending": (
        "end_status",
        "redacted_tail",
        "tail_margin",
    ),
    "supervisor.launch._lease": ("OwnerLease",),
    "supervisor.launch._ownership": (
        "OwnerLock",
        "Ownership",
        "live_owners",
        "owner_directory",
        "owner_for",
    ),
    "supervisor.launch._plan": (
        "LaunchPlan",
        "oracle_plan",
    ),
    "supervisor.launch._private_files": (
        "keep_newest",
        "read_private",
        "write_private",
    ),
    "supervisor.launch._progress": (
        "PhaseReporter",
        "report_phase",
    ),
    "supervisor.launch._result": (
        "LaunchResult",
        "unwrap_error",
    ),
    "supervisor.launch._runtime_dir": (
        "CONTAINER_GID",
        "CONTAINER_MOUNT",
        "CONTAINER_UID",
        "LaunchRuntimeDir",
        "RuntimeRoot",
        "supervisor_id_for",
    ),
    "supervisor.launch._socket": ("launch_socket",),
    "supervisor.launch._spec": (
        "DEFAULT_CPU_SHARES",
        "LABEL_LAUNCH",
        "LABEL_POOL",
        "LABEL_SUPERVISOR",
        "ROLE_PYTHON",
        "ContainerOutcome",
        "LaunchLimits",
        "LaunchPhase",
        "LaunchSpec",
        "container_kwargs",
        "container_name",
        "parse_memory",
    ),
}
if not TYPE_CHECKING:  # for mypy, the imports above: a misspelt name is an error
    __getattr__ = lazy_exports(__name__, _EXPORTS)
