"""Role launch: launch-to-exit time of a no-op role through DockerLauncher beside a bare ``docker run``.

Each repetition runs, in turn (interleaved, so drift on a shared machine hits all three alike):

* ``docker run --rm IMAGE --version``: the baseline, the engine's own floor plus the CLI;
* the same ``docker run --rm`` with every hardening flag the launcher sets: what hardening costs;
* ``DockerLauncher.run`` of the same no-op, from ``request`` to the recorded end: a launch record
  with its events, a runtime directory with a token file, create, start, wait, inspect, logs,
  remove, and the directory removed again.

Prints medians and p95 beside the baseline, then the median time of each launcher phase. With
``--build`` it also times the role image build: a forced rebuild (wheels and ``docker build``; the
debootstrap base is reused when present) and the no-op check that follows it.
With ``--backend both`` (the default) the launcher runs twice per repetition, once over the lean
Engine API backend and once over the docker SDK's, so the two compare in the same run.
Usage: ``python -m benchmarks.bench_launch [--repeat N] [--image TAG] [--backend lean|sdk|both] [--build]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import anyio
import anyio.to_thread

from benchmarks._timing import Timing
from store import init_project, open_store
from store.config import package_version
from supervisor.docker._backend import DockerBackend
from supervisor.docker._client import DockerClient
from supervisor.docker._engine_api import EngineApiBackend
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import LaunchLimits, LaunchPhase, LaunchSpec
from supervisor.logging import configure_logging

_LIMITS = LaunchLimits(memory_bytes=512 * 1024**2, cpus=1.0, pids=128, nofile=1024)


_PHASES = {
    LaunchPhase.CREATING: "request: launch row + event, runtime dir, token file",
    LaunchPhase.CREATED: "containers.create + container id committed",
    LaunchPhase.RUNNING: "start + running committed",
    LaunchPhase.STOPPED: "wait: the container runs the no-op",
    LaunchPhase.ENDED: "inspect, logs, remove, end committed",
}


def _bare(image: str) -> list[str]:
    return ["docker", "run", "--rm", image, "--version"]


def _hardened_cli(image: str) -> list[str]:
    return [
        "docker", "run", "--rm", "--user", "10001:10001", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges:true", "--read-only",
        "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=64m", "--network", "none",
        "--memory", str(_LIMITS.memory_bytes), "--memory-swap", str(_LIMITS.memory_bytes),
        "--cpus", str(_LIMITS.cpus), "--pids-limit", str(_LIMITS.pids),
        "--ulimit", f"nofile={_LIMITS.nofile}:{_LIMITS.nofile}", "--ulimit", "msgqueue=0:0",
        "--ipc", "none", "--init", "--log-opt", "max-size=1m", image, "--version",
    ]  # fmt: skip


async def _timed_cli(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = await anyio.run_process(argv, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed: {proc.stderr.decode().strip()}")
    return elapsed


def _sdk_backend() -> DockerBackend:
    from supervisor.docker._sdk import SdkDockerBackend

    return SdkDockerBackend()


_BACKENDS = {"lean": EngineApiBackend, "sdk": _sdk_backend}


async def _main(repeat: int, image: str, backends: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="rt-bench-", dir="/tmp") as tmp:
        paths, _ = init_project(Path(tmp) / "proj")
        store = open_store(paths)
        runtime = RuntimeRoot("rtbench", base=Path(tmp) / "rt")
        launchers = {
            name: DockerLauncher(
                store.launches,
                supervisor_id="rtbench",
                runtime=runtime,
                docker=DockerClient(_BACKENDS[name]),
            )
            for name in backends
        }
        phases: dict[str, list[float]] = defaultdict(list)

        async def launch(launcher: DockerLauncher) -> float:
            start = time.perf_counter()
            record = await store.db.run(
                store.launches.request,
                role="memory_oracle",
                agent_id="bench",
                proposal_id="P-bench",
                image=image,
            )
            rundir = runtime.create(record.id)
            rundir.write_token_file("bench-token")
            spec = LaunchSpec(
                launch_id=record.id,
                role=record.role,
                proposal_id=record.proposal_id,
                image=image,
                command=("--version",),
                runtime_dir=rundir.path,
                limits=_LIMITS,
                timeout_seconds=60,
            )
            last = start

            def on_phase(phase: LaunchPhase) -> None:
                nonlocal last
                now = time.perf_counter()
                phases[str(phase)].append(now - last)
                last = now

            outcome = await launcher.run(spec, on_phase=on_phase)
            rundir.remove()
            if outcome.exit_code != 0:
                raise SystemExit(f"the no-op launch failed: {outcome.to_dict()}\n{outcome.log_tail}")
            return time.perf_counter() - start

        try:
            # Warm-up: page in the image, the CLI and each backend's connections.
            await _timed_cli(_bare(image))
            await _timed_cli(_hardened_cli(image))
            for launcher in launchers.values():
                await launcher.docker.ping()
                await launch(launcher)
            phases.clear()
            samples: dict[str, list[float]] = defaultdict(list)
            for _ in range(repeat):
                samples["bare"].append(await _timed_cli(_bare(image)))
                samples["hardened"].append(await _timed_cli(_hardened_cli(image)))
                for name, launcher in launchers.items():
                    samples[name].append(await launch(launcher))
        finally:
            for launcher in launchers.values():
                await launcher.aclose()
            store.close()

    baseline = Timing("docker run --rm IMAGE --version (baseline)", samples["bare"])
    hardened = Timing("docker run --rm + every hardening flag", samples["hardened"])
    ours = [Timing(f"DockerLauncher.run, {name} backend", samples[name]) for name in backends]
    print(f"role launch, no-op ({image}), {repeat} interleaved repetitions")
    for timing in (baseline, hardened, *ours):
        print(timing.line(baseline))
    for name, timing in zip(backends, ours, strict=True):
        print(f"launcher ({name}) vs hardened docker run: x{timing.median / hardened.median:.2f}")
    print("launcher phases, all backends (median time from the previous phase):")
    for phase, what in _PHASES.items():
        values = phases.get(str(phase), [])
        median = f"{statistics.median(values) * 1000:9.1f} ms" if values else "        -"
        print(f"  {phase!s:<9} {what:<58}{median}")


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--image", default=f"roundtable-role:{package_version()}")
    parser.add_argument("--backend", choices=["lean", "sdk", "both"], default="both")
    parser.add_argument("--build", action="store_true", help="also time a forced image rebuild and a no-op")
    args = parser.parse_args()
    configure_logging(verbose=False, json_logs=True)
    if args.build:
        _time_image_build()
    backends = ["lean", "sdk"] if args.backend == "both" else [args.backend]
    anyio.run(_main, args.repeat, args.image, backends)


def _time_image_build() -> None:
    from supervisor.image._build import build_role_image

    forced = build_role_image(offline=True, force=True, progress=lambda line: None)
    start = time.perf_counter()
    noop = build_role_image(offline=True, progress=lambda line: None)
    check = time.perf_counter() - start
    print(f"image build, forced (base reused)            {forced.seconds:8.1f} s")
    print(f"image build, up to date (built={noop.built})        {check * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
