"""What a prestarted container may be created with: nothing weaker than every launch's hardening.

A prestart (:mod:`supervisor.docker._prestart`) creates its container from a recipe before the
pool compares the arguments with its own, and a container that is not adopted has run all the
same; so the arguments are checked first, against the measures no configuration changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from supervisor.launch import CONTAINER_GID, CONTAINER_MOUNT, CONTAINER_UID

__all__ = ["KEYS", "canonical", "hardening_problem"]

KEYS = frozenset(
    {"image", "command", "entrypoint", "name", "user", "environment", "labels", "privileged", "cap_drop",
     "security_opt", "read_only", "tmpfs", "network_mode", "mem_limit", "memswap_limit", "nano_cpus",
     "pids_limit", "ulimits", "ipc_mode", "init", "mounts", "log_config", "cpu_shares"}
)  # fmt: skip
"""Every key :func:`~supervisor.launch.container_kwargs` may produce (a test holds them equal)."""


def hardening_problem(kwargs: Mapping[str, Any], *, rundir: str) -> str | None:
    """What in ``kwargs`` (a prestart's create arguments) is weaker than every launch's hardening, or
    None. Checked before the container is created: the pool's comparison comes only later, and a
    container that is not adopted has run all the same."""
    expected: dict[str, Any] = {
        "privileged": False,
        "read_only": True,
        "init": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "network_mode": "none",
        "ipc_mode": "none",
        "user": f"{CONTAINER_UID}:{CONTAINER_GID}",
        "mounts": [{"Target": CONTAINER_MOUNT, "Source": rundir, "Type": "bind", "ReadOnly": True}],
    }
    for key, value in expected.items():
        if canonical(kwargs.get(key)) != canonical(value):
            return f"{key} is {kwargs.get(key)!r}"
    if set(kwargs) - KEYS:
        return f"unknown arguments {sorted(set(kwargs) - KEYS)}"
    tmpfs = kwargs.get("tmpfs")
    if not isinstance(tmpfs, dict) or set(tmpfs) != {"/tmp"}:  # noqa: S108 (the container's own)
        return f"tmpfs is {tmpfs!r}"
    return None


def canonical(value: Any) -> str:
    """One spelling of a JSON value, types included (``True`` is not ``1``)."""
    return json.dumps(value, sort_keys=True)
