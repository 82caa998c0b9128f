"""The container engine's share of a launch's CPU, and the throughput ceiling it sets on a machine.

Every launch, pooled or not, is one container the engine creates, starts, waits for and removes;
with a warm pool the wall time of that work is hidden from the launch, but its CPU is not: on a
machine of ``cores`` cores, ``n`` launches at once take at least ``n * engine CPU / cores``,
whatever Roundtable does. :class:`EngineFloor` takes that CPU from the launches themselves (a
:class:`~benchmarks._cpu.CpuMeter` around rounds of launches at once): the engine's daemons and
waited children (``dockerd``, ``containerd``, ``runc``), plus what the machine spent that no named
process explains (the shims, which no process we can read waits for, and the kernel's work for
them), less the machine's background load, measured over an idle interval as long as each round
(:meth:`EngineFloor.idle`). The rest, the serve, the commands and the containers' own processes
(the runner), is Roundtable's. The ceiling reported is the most ``n`` launches at once could gain
over ``n`` in turn taking ``in_turn`` seconds if Roundtable's share were nothing:
``in_turn / (n * engine CPU / cores)``; and beside it the ceiling both shares set together,
``in_turn / (n * (engine + Roundtable) CPU / cores)``, the most 8 at once can gain as the launches
are. A launch that uses the machine for as long as it takes (no wait on anything but CPU) therefore
gains at most ``cores`` times at once, and less as its own work already runs on several cores.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from benchmarks._cpu import CpuMeter

__all__ = ["EngineFloor"]

_MACHINE = "whole machine"
_ENGINE_PREFIXES = ("dockerd", "containerd")


class EngineFloor:
    """Splits a :class:`~benchmarks._cpu.CpuMeter`'s totals into the engine's share and ours."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self._background = CpuMeter({})

    def idle(self, seconds: float) -> None:
        """Measure the machine's background load over ``seconds`` in which no launch runs."""
        with self._background.measure():
            time.sleep(seconds)  # not waiting for anything: this interval is the measurement

    def shares(self, totals: Mapping[str, float], launches: int) -> tuple[float, float]:
        """(engine, Roundtable) CPU seconds per launch, of ``totals`` over ``launches`` launches."""
        named = sum(value for name, value in totals.items() if name != _MACHINE)
        engine = sum(value for name, value in totals.items() if name.startswith(_ENGINE_PREFIXES))
        unexplained = totals.get(_MACHINE, named) - named - self._background.totals.get(_MACHINE, 0.0)
        return (engine + max(unexplained, 0.0)) / launches, (named - engine) / launches

    def report(self, totals: Mapping[str, float], launches: int, batch: int, in_turn: float) -> list[str]:
        """The split and the ceiling it sets on ``batch`` launches taking ``in_turn`` seconds in turn."""
        engine, ours = self.shares(totals, launches)
        lines = [
            f"  CPU per launch at once: the engine's {engine * 1000:6.1f} ms,"
            f" Roundtable's {ours * 1000:6.1f} ms (serve, command, runner)"
        ]
        if engine > 0:
            floor = batch * engine / self.cores
            lines.append(
                f"  engine floor of {batch} at once: {batch} x {engine * 1000:.0f} ms / {self.cores} cores"
                f" = {floor * 1000:.0f} ms, a throughput ceiling of x{in_turn / floor:5.2f}"
                f" over the {batch} in turn"
            )
        if engine + ours > 0:
            floor = batch * (engine + ours) / self.cores
            lines.append(
                f"  CPU floor of {batch} at once (both shares): {floor * 1000:.0f} ms, a throughput"
                f" ceiling of x{in_turn / floor:5.2f} over the {batch} in turn, as the launches are"
            )
        return lines
