"""The docker SDK's ``containers.create`` keyword arguments as the Engine API's create body.

:func:`create_body` translates exactly the keyword arguments Roundtable passes
(:func:`supervisor.launch.container_kwargs`, plus a few plain ones) into the JSON of
``POST /containers/create``: the container config at the top, the host config (every hardening
measure) under ``HostConfig``. A key it does not know raises :class:`ValueError`, so no setting is
ever dropped in silence; values are translated the way the SDK translates them (environment
``NAME=value`` lines, ``shlex``-split string commands, byte sizes such as ``"96m"``).

:func:`demultiplex` splits the engine's multiplexed stdout/stderr stream (8-byte frame headers) of a
container without a TTY back into its payloads.
"""

from __future__ import annotations

import re
import shlex
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["create_body", "demultiplex"]

_BYTE_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE = re.compile(r"(\d+)([bkmg]?)b?", re.IGNORECASE)


def _argv(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return shlex.split(value)
    return [str(arg) for arg in value]


def _environment(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [key if item is None else f"{key}={item}" for key, item in value.items()]
    return [str(line) for line in value]


def _labels(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(key): str(item) for key, item in value.items()}
    return {str(key): "" for key in value}


def _bytes(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.fullmatch(str(value).strip())
    if match is None:
        raise ValueError(f"not a byte size: {value!r}")
    return int(match.group(1)) * _BYTE_UNITS[(match.group(2) or "b").lower()]


def _ulimits(value: Any) -> list[dict[str, Any]]:
    limits = []
    for limit in value:
        name = limit.get("name", limit.get("Name"))
        if not isinstance(name, str):
            raise ValueError(f"a ulimit needs a name: {limit!r}")
        limits.append(
            {
                "Name": name,
                "Soft": limit.get("soft", limit.get("Soft")),
                "Hard": limit.get("hard", limit.get("Hard")),
            }
        )
    return limits


def _tmpfs(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(path): str(options) for path, options in value.items()}
    pairs = (str(entry).split(":", 1) for entry in value)
    return {pair[0]: pair[1] if len(pair) > 1 else "" for pair in pairs}


def _mounts(value: Any) -> list[dict[str, Any]]:
    mounts = []
    for mount in value:
        if not isinstance(mount, Mapping) or "Target" not in mount:
            raise ValueError(f"a mount must be an Engine API mount object: {mount!r}")
        mounts.append(dict(mount))
    return mounts


def _log_config(value: Any) -> dict[str, Any]:
    return {
        "Type": value.get("type", value.get("Type")),
        "Config": dict(value.get("config", value.get("Config")) or {}),
    }


def _binds(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [f"{source}:{spec['bind']}:{spec.get('mode', 'rw')}" for source, spec in value.items()]
    return [str(bind) for bind in value]


def _same(value: Any) -> Any:
    return value


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value]


# SDK keyword -> (the Engine API field, where it goes, how its value translates)
_CONFIG: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "image": ("Image", str),
    "command": ("Cmd", _argv),
    "entrypoint": ("Entrypoint", _argv),
    "user": ("User", str),
    "environment": ("Env", _environment),
    "labels": ("Labels", _labels),
    "working_dir": ("WorkingDir", str),
    "hostname": ("Hostname", str),
    "stop_signal": ("StopSignal", str),
    "tty": ("Tty", bool),
}
_HOST_CONFIG: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "privileged": ("Privileged", bool),
    "cap_drop": ("CapDrop", _strings),
    "cap_add": ("CapAdd", _strings),
    "security_opt": ("SecurityOpt", _strings),
    "read_only": ("ReadonlyRootfs", bool),
    "tmpfs": ("Tmpfs", _tmpfs),
    "network_mode": ("NetworkMode", str),
    "mem_limit": ("Memory", _bytes),
    "memswap_limit": ("MemorySwap", _bytes),
    "nano_cpus": ("NanoCpus", int),
    "cpu_shares": ("CpuShares", int),
    "pids_limit": ("PidsLimit", int),
    "ulimits": ("Ulimits", _ulimits),
    "ipc_mode": ("IpcMode", str),
    "init": ("Init", bool),
    "mounts": ("Mounts", _mounts),
    "volumes": ("Binds", _binds),
    "log_config": ("LogConfig", _log_config),
    "auto_remove": ("AutoRemove", bool),
    "shm_size": ("ShmSize", _bytes),
    "sysctls": ("Sysctls", _same),
}


def create_body(kwargs: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The container name and the ``POST /containers/create`` body for ``containers.create(**kwargs)``.

    Raises :class:`ValueError` for a keyword this translation does not know (nothing is dropped).
    """
    unknown = sorted(set(kwargs) - set(_CONFIG) - set(_HOST_CONFIG) - {"name"})
    if unknown:
        raise ValueError(f"the Engine API backend does not translate create arguments {unknown}")
    if not kwargs.get("image"):
        raise ValueError("a container needs an image")
    # What the SDK always sends: a detached create attaches stdout and stderr, not stdin.
    body: dict[str, Any] = {
        "AttachStdin": False,
        "AttachStdout": True,
        "AttachStderr": True,
        "OpenStdin": False,
        "StdinOnce": False,
        "Tty": False,
    }
    host: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "name" or value is None:
            continue
        if key in _CONFIG:
            field, convert = _CONFIG[key]
            body[field] = convert(value)
        else:
            field, convert = _HOST_CONFIG[key]
            host[field] = convert(value)
    host.setdefault("NetworkMode", "default")
    body["HostConfig"] = host
    name = kwargs.get("name")
    return (None if name is None else str(name)), body


_HEADER = struct.Struct(">BxxxL")


def demultiplex(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The payloads of a multiplexed log stream, stdout and stderr alike, read with ``read(n)``.

    Raises :class:`ValueError` when the stream is not made of frames (a truncated header or payload).
    """
    while True:
        header = read(_HEADER.size)
        if not header:
            return
        if len(header) < _HEADER.size:
            raise ValueError("the engine's log stream ended inside a frame header")
        stream, size = _HEADER.unpack(header)
        if stream > 2:
            raise ValueError(f"the engine's log stream has a frame of stream {stream}")
        while size:
            payload = read(min(size, 65536))
            if not payload:
                raise ValueError("the engine's log stream ended inside a frame")
            size -= len(payload)
            yield payload
