"""Where the CPU of a timed block goes, by component: a process of ours, the commands we started
and waited for, the Docker engine's daemons, the containers, the whole machine.

:class:`CpuMeter` reads ``/proc`` and the containers' cgroup before and after the block (Linux
only; a figure it cannot read is left out). The machine's figure counts everything, other
sessions' work too: what the named components do not explain is the rest of it.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CpuMeter"]

_TICK = os.sysconf("SC_CLK_TCK")
_CONTAINER_CGROUPS = (
    Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"),  # cgroup v1, the cgroupfs driver
    Path("/sys/fs/cgroup/system.slice/cpu.stat"),  # cgroup v2, the systemd driver: an upper bound
)
_DAEMONS = ("dockerd", "containerd")


def _process_seconds(pid: int, *, with_children: bool = False) -> float | None:
    """CPU seconds of ``pid`` (its threads; and the children it waited for, if asked), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    used = int(fields[11]) + int(fields[12])
    if with_children:
        used += int(fields[13]) + int(fields[14])
    return used / _TICK


def _pids_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _containers_seconds() -> float | None:
    for path in _CONTAINER_CGROUPS:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.name == "cpuacct.usage":
            return int(text) / 1e9
        for line in text.splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
    return None


def _machine_seconds() -> float:
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / _TICK  # all but idle and iowait


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """Adds up, over :meth:`measure` blocks, the CPU seconds of each component."""

    def __init__(self, processes: dict[str, int]):
        """``processes``: a name for each long-lived process of ours to follow (say the serve)."""
        self.processes = processes
        self.totals: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        figures: dict[str, float] = {"commands we waited for": _children_seconds()}
        for name, pid in self.processes.items():
            if (seconds := _process_seconds(pid)) is not None:
                figures[name] = seconds
        if (containers := _containers_seconds()) is not None:
            figures["containers"] = containers
        for daemon in _DAEMONS:
            pids = _pids_named(daemon)
            if pids:  # with the children they waited for (runc, the storage driver's helpers)
                figures[f"{daemon} (+ its waited children)"] = sum(
                    _process_seconds(pid, with_children=True) or 0.0 for pid in pids
                )
        figures["whole machine"] = _machine_seconds()
        return figures

    @contextmanager
    def measure(self) -> Iterator[None]:
        """Count the CPU each component uses during the block."""
        before = self._read()
        yield
        after = self._read()
        for name, value in after.items():
            if name in before:
                self.totals[name] = self.totals.get(name, 0.0) + value - before[name]

    def report(self, per: int, indent: str = "  ") -> list[str]:
        """One line per component: milliseconds per ``per`` (launches), the rest of the machine last."""
        lines, named = [], 0.0
        for name, seconds in self.totals.items():
            if name != "whole machine":
                named += seconds
                lines.append(f"{indent}{name:40s} {seconds * 1000 / per:7.1f} ms")
        if "whole machine" in self.totals:
            rest = self.totals["whole machine"] - named
            lines.append(f"{indent}{'rest of the machine (shims, others)':40s} {rest * 1000 / per:7.1f} ms")
        return lines
