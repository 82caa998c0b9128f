"""Commands that keep running after they answer: progress lines, and detached supervisor processes.

``oracle launch`` and ``review run`` without ``--wait`` start themselves again with ``--wait`` in
a new session and return as soon as the child announces (on a pipe) that its work is recorded;
the child's progress and result go to a log file under ``.roundtable/logs``, so it never writes
to a reader that has gone away. Before detaching, the command checks the proposal, so an unknown
or closed proposal is the real ``not_found`` or ``conflict``, not a child that died.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from store.errors import Conflict, InternalError
from supervisor.cli._launch_text import progress_printer

__all__ = [
    "Announcer",
    "Detached",
    "check_reviewable",
    "foreground_reporter",
    "progress_printer",
    "resolve_proposal",
    "start_detached",
]


class Announcer:
    """The child's side of the pipe: announce once, at the phase that says the work is recorded."""

    def __init__(self, fd: int | None, phase: str):
        self._pipe: TextIO | None = os.fdopen(fd, "w") if fd is not None else None
        self._phase = phase

    def __call__(self, phase: str, details: dict[str, Any]) -> None:
        """Announce ``details`` if ``phase`` is the one awaited (and not announced yet)."""
        if self._pipe is not None and phase == self._phase and not self._pipe.closed:
            self._pipe.write(json.dumps(details) + "\n")
            self._pipe.close()


def foreground_reporter(args: Any, recorded_phase: str) -> Callable[[str, dict[str, Any]], None]:
    """The phase hook of a ``--wait`` run: each phase printed (:func:`progress_printer`), and the
    parent of a detached run told at ``recorded_phase`` (:class:`Announcer`, ``--announce-fd``)."""
    report = progress_printer(args.json)
    announce = Announcer(args.announce_fd, recorded_phase)

    def on_phase(phase: str, details: dict[str, Any]) -> None:
        report(phase, details)
        announce(phase, details)

    return on_phase


async def resolve_proposal(args: Any) -> str:
    """The full ID of the proposal ``args.proposal_id`` names (an ID or a unique prefix of one)."""
    import anyio.to_thread

    from supervisor.cli._project import resolve_root_id

    return await anyio.to_thread.run_sync(resolve_root_id, args.root, "proposal", args.proposal_id)


def check_reviewable(root: str | None, proposal_id: str) -> Path:
    """The project root, if ``proposal_id`` exists and is open to launches (else its real error)."""
    from store import find_project_root, open_store
    from store.work import ProposalStatus

    paths = find_project_root(root)
    store = open_store(paths)
    try:
        proposal = store.proposals.get(proposal_id)
    finally:
        store.close()
    if ProposalStatus(proposal["status"]) in ProposalStatus.CLOSED_TO_LAUNCHES:
        raise Conflict(f"proposal {proposal_id} is {proposal['status']}; launches review open proposals")
    if proposal.get("patch") is None:
        raise Conflict(f"proposal {proposal_id} has no patch version to review")
    return paths.root


class Detached:
    """A started child: its pid, its log, and what it announced."""

    def __init__(self, pid: int, log: Path, announced: dict[str, Any]):
        self.pid = pid
        self.log = log
        self.announced = announced


def start_detached(root: Path, argv: list[str], log_stem: str) -> Detached:
    """Run ``python -m supervisor ARGV --root ROOT --announce-fd N`` in a new session; wait for its
    announcement (``internal`` if it ends without one, naming the log)."""
    logs = root / ".roundtable" / "logs"
    logs.mkdir(exist_ok=True)
    log_path = logs / f"{log_stem}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    read_fd, write_fd = os.pipe()
    command = [sys.executable, "-m", "supervisor", *argv, "--root", str(root), "--announce-fd", str(write_fd)]
    with open(log_path, "ab") as log_file:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    os.close(write_fd)
    with os.fdopen(read_fd) as announce:
        line = announce.readline()
    if not line:
        child.wait()
        raise InternalError(f"the background run ended before it was recorded; see {log_path}")
    return Detached(child.pid, log_path, json.loads(line))
