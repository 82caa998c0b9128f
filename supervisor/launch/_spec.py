"""What a launch asks for, what it produced, and the hardened container settings derived from it.

:func:`container_kwargs` is the one place that turns a :class:`LaunchSpec` into the arguments of the
docker SDK's ``containers.create``. Every measure of SECURITY.md's "Role containers" table is here,
fixed, not configurable by the spec: a spec chooses the image, the command, non-secret environment
variables, the runtime directory and the size of the limits, never whether they apply.

Three settings go beyond the table, so that "only ``/tmp`` is writable" holds literally and the
host's disk is safe: ``ipc_mode="none"`` (no ``/dev/shm``), a ``msgqueue`` ulimit of 0 (no POSIX
message queues in ``/dev/mqueue``) and a size-capped ``json-file`` log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from store import check_int
from store.config import ContainerConfig
from store.errors import InvalidArgument
from store.launches import LaunchStatus
from supervisor.launch._runtime_dir import CONTAINER_MOUNT, supervisor_id_for

__all__ = [
    "CONTAINER_USER",
    "DEFAULT_CPU_SHARES",
    "LABEL_LAUNCH",
    "LABEL_POOL",
    "LABEL_PROPOSAL",
    "LABEL_ROLE",
    "LABEL_SUPERVISOR",
    "POOL_CPU_SHARES",
    "ROLE_PYTHON",
    "TMPFS_OPTIONS",
    "ContainerOutcome",
    "LaunchLimits",
    "LaunchPhase",
    "LaunchSpec",
    "container_kwargs",
    "container_name",
    "parse_memory",
    "supervisor_id_for",
]

CONTAINER_USER = "10001:10001"
ROLE_PYTHON = "/opt/roundtable/venv/bin/python"
"""The role image's interpreter (deploy/Dockerfile), for entrypoints other than the runner."""
TMPFS_OPTIONS = "rw,noexec,nosuid,nodev,size=64m"
LABEL_SUPERVISOR = "roundtable.supervisor"
LABEL_LAUNCH = "roundtable.launch"
LABEL_PROPOSAL = "roundtable.proposal"
LABEL_ROLE = "roundtable.role"
POOL_CPU_SHARES = 2
"""A waiting pooled container's CPU weight (the engine's default is 1024, given back at the claim): the
imports of a refill never slow down a running launch."""
DEFAULT_CPU_SHARES = 1024
LABEL_POOL = "roundtable.pool"
"""On a warm pool's container: the owner (:class:`~supervisor.launch.OwnerLock` name) that started it."""
# The engine keeps a container's output on the host until it is removed; cap it so that a chatty
# role cannot fill the host's disk in the meantime.
LOG_CONFIG = {"type": "json-file", "config": {"max-size": "1m", "max-file": "1"}}

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Secrets reach a container only as the token file: refuse environment names that look like one.
_SECRET_NAME = re.compile(r"(?i)(token|secret|passw|api_?key|credential|private_?key)")
# A variable naming where a secret *file* is (ROUNDTABLE_TOKEN_FILE) holds a path, not the secret.
_PATH_NAME = re.compile(r"(?i).+_(file|path|dir)")
# ASCII digits, and few enough that float() stays finite ("1" * 400 would be inf, then OverflowError).
_MEMORY = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,9})?)\s*([kmg]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_memory(text: str | int) -> int:
    """Bytes from ``"512m"``, ``"1g"``, ``"64MiB"`` or a plain integer (bytes)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _MEMORY.fullmatch(str(text))
        if match is None:
            raise InvalidArgument(f"memory limit {text!r} is not a size like 512m or 1g")
        value = int(float(match[1]) * _UNITS[match[2].lower()])
    if value < 6 * 1024**2:  # the engine's own minimum
        raise InvalidArgument(f"memory limit {text!r} is below the engine's minimum of 6m")
    return check_int("the memory limit in bytes", value)  # the engine takes a 64-bit integer


def container_name(launch_id: str) -> str:
    """The container's name: unique per launch, so a retried create finds its own container."""
    return f"roundtable-{launch_id}"


class LaunchPhase(StrEnum):
    """Progress reported to the ``on_phase`` hook of :meth:`DockerLauncher.run`, in this order."""

    CREATING = "creating"
    CREATED = "created"  # the container exists and its id is committed
    RUNNING = "running"
    STOPPED = "stopped"  # the container no longer runs (exit, kill, failure): revoke now
    ENDED = "ended"  # the container is removed and the launch record is final


@dataclass(frozen=True)
class LaunchLimits:
    """Resource limits of one container."""

    memory_bytes: int = 512 * 1024**2
    cpus: float = 1.0
    pids: int = 128
    nofile: int = 1024

    def __post_init__(self) -> None:
        if self.memory_bytes < 6 * 1024**2:
            raise InvalidArgument("memory_bytes must be at least 6 MiB")
        if not (math.isfinite(self.cpus) and 0.01 <= self.cpus <= 64):
            raise InvalidArgument("cpus must be between 0.01 and 64")
        if not 8 <= self.pids <= 65536:
            raise InvalidArgument("pids must be between 8 and 65536")
        if not 16 <= self.nofile <= 1048576:
            raise InvalidArgument("nofile must be between 16 and 1048576")

    @classmethod
    def from_role(cls, role: ContainerConfig) -> LaunchLimits:
        """The limits a role's ``config.toml`` section asks for."""
        return cls(
            memory_bytes=parse_memory(role.memory_limit),
            cpus=role.cpus,
            pids=role.pids_limit,
            nofile=role.nofile_limit,
        )


@dataclass(frozen=True)
class LaunchSpec:
    """Everything :meth:`DockerLauncher.run` needs to run one recorded launch.

    ``environment`` is for non-secret settings only (it shows in ``docker inspect``); the grant's token
    reaches the container as the file in ``runtime_dir``. Strings in ``redact`` (the token, for one)
    are cut out of the log tail before it is stored.
    """

    launch_id: str
    role: str
    proposal_id: str
    image: str
    command: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    runtime_dir: Path | None = None
    limits: LaunchLimits = field(default_factory=LaunchLimits)
    timeout_seconds: float = 300.0
    redact: frozenset[str] = field(default_factory=frozenset, repr=False)

    def __post_init__(self) -> None:
        for name in ("launch_id", "role", "proposal_id", "image"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip() or "\x00" in value:
                raise InvalidArgument(f"{name} must be a non-blank string")
        for arg in (*self.command, *(self.entrypoint or ())):
            if not isinstance(arg, str) or "\x00" in arg:
                raise InvalidArgument("command and entrypoint arguments must be strings without NUL")
        for key, value in self.environment.items():
            if not _ENV_NAME.fullmatch(key) or not isinstance(value, str) or "\x00" in value:
                raise InvalidArgument(f"environment variable {key!r} is not a plain NAME=value")
            if _SECRET_NAME.search(key) and not _PATH_NAME.fullmatch(key):
                raise InvalidArgument(
                    f"environment variable {key!r} looks like a secret: secrets reach a container only "
                    "as the token file, never as environment (it shows in docker inspect)"
                )
        if not (math.isfinite(self.timeout_seconds) and 0 < self.timeout_seconds <= 86400):
            raise InvalidArgument("timeout_seconds must be between 0 and 86400")
        if self.runtime_dir is not None and not Path(self.runtime_dir).is_absolute():
            raise InvalidArgument("runtime_dir must be an absolute path")


def container_kwargs(
    spec: LaunchSpec, supervisor_id: str, *, pool_owner: str | None = None, low_weight: bool = True
) -> dict[str, Any]:
    """The ``containers.create`` arguments for ``spec``: every hardening measure, always.

    ``pool_owner`` marks a warm pool's container (label :data:`LABEL_POOL`): its spec names a pool
    slot, not a launch, until a launch claims it; it waits at the lowest CPU weight
    (:data:`POOL_CPU_SHARES`) unless ``low_weight`` is false (a one-shot command's container, which
    its own launch is about to claim: at the lowest weight it would start only once the command's
    imports leave it a core)."""
    # Plain Engine API shapes (no docker.types): both backends take them as they are, and building
    # them imports nothing.
    limits = spec.limits
    mounts: list[dict[str, Any]] = []
    if spec.runtime_dir is not None:
        mounts.append(
            {"Target": CONTAINER_MOUNT, "Source": str(spec.runtime_dir), "Type": "bind", "ReadOnly": True}
        )
    return {
        "image": spec.image,
        "command": list(spec.command) or None,
        "entrypoint": None if spec.entrypoint is None else list(spec.entrypoint),
        "name": container_name(spec.launch_id),
        "user": CONTAINER_USER,
        "environment": dict(spec.environment),
        "labels": {
            LABEL_SUPERVISOR: supervisor_id,
            LABEL_LAUNCH: spec.launch_id,
            LABEL_PROPOSAL: spec.proposal_id,
            LABEL_ROLE: spec.role,
            **({LABEL_POOL: pool_owner} if pool_owner is not None else {}),
        },
        "privileged": False,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "read_only": True,
        "tmpfs": {"/tmp": TMPFS_OPTIONS},  # noqa: S108 (the container's own tmpfs)
        "network_mode": "none",
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,
        "nano_cpus": round(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        # msgqueue 0: no POSIX message queues, so /dev/mqueue takes no writes either.
        "ulimits": [
            {"Name": "nofile", "Soft": limits.nofile, "Hard": limits.nofile},
            {"Name": "msgqueue", "Soft": 0, "Hard": 0},
        ],
        "ipc_mode": "none",  # no /dev/shm: with a read-only root, /tmp is the only writable place
        "init": True,
        "mounts": mounts,
        "log_config": {"Type": LOG_CONFIG["type"], "Config": LOG_CONFIG["config"]},
        **({"cpu_shares": POOL_CPU_SHARES} if pool_owner is not None and low_weight else {}),
    }


@dataclass(frozen=True)
class ContainerOutcome:
    """How a launch ended, as recorded.

    ``status`` is ``exited`` (status 0), ``failed`` (``reason`` ``nonzero_exit`` or ``oom``), or
    ``timeout`` (``reason`` ``deadline_exceeded``; the container was killed). ``warnings`` name clean-up
    steps that did not work (the reaper finishes them).
    """

    launch_id: str
    status: LaunchStatus
    exit_code: int | None
    reason: str | None
    oom_killed: bool
    container_id: str | None
    log_tail: str
    seconds: float
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``oracle launch --wait``'s ``launch`` object (plus details)."""
        return {
            "id": self.launch_id,
            "status": str(self.status),
            "exit_code": self.exit_code,
            "reason": self.reason,
            "oom_killed": self.oom_killed,
            "container_id": self.container_id,
            "seconds": round(self.seconds, 3),
            "warnings": list(self.warnings),
        }
