"""One "host" of the two-host test: a real supervisor process on a shared PostgreSQL store.

``python -m tests.supervisor.multihost.host_worker ROOT`` (run inside a network namespace, with
``ROUNDTABLE_STORE_URL`` set) opens the project checkout ROOT, starts a :class:`Supervisor` with
background reaping (``warm(0)``: the lease watch, no warm pool) and answers one JSON command per
stdin line with JSON lines on stdout:

- ``{"do": "scene"}``: a task, a proposal with a patch, a review round -> ``{"scene": proposal_id}``;
- ``{"do": "launch", "proposal": P}``: a launch of the MemoryOracle whose container hangs (so it
  is running when the test kills this process); each phase -> ``{"phase", "launch_id"}``;
- ``{"do": "writes", "proposal": P, "count": N, "prefix": S}``: N idempotent memory creates (key
  ``S-i``) and N votes; before each create ``{"sending": key}``, after each commit an ack
  (``{"ack": "idem", ...}``, ``{"ack": "vote", ...}``): an ack is a write the store acknowledged;
- ``{"do": "replay", "keys": [...], "prefix": S}``: the same creates again, under the same keys;
- ``{"do": "stop"}``: a clean stop (launches cancelled, lease released) -> exits 0.

It prints ``{"ready": owner, "engine": ..., "host": ...}`` once its lease is held.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from store import ProjectPaths, Store, open_store
from store.events import IdempotencyClaim
from supervisor._supervisor import Supervisor
from supervisor.launch import LaunchSpec
from supervisor.logging import configure_logging

_PYTHON = "/opt/roundtable/venv/bin/python"
_DIFF = (
    "diff --git a/two_hosts.txt b/two_hosts.txt\nnew file mode 100644\n--- /dev/null\n"
    "+++ b/two_hosts.txt\n@@ -0,0 +1 @@\n+one store, two hosts\n"
)


def _hang(spec: LaunchSpec) -> LaunchSpec:
    return replace(spec, entrypoint=(_PYTHON, "-c", "import time\nwhile True: time.sleep(60)"), command=())


def say(**fields: Any) -> None:
    """One JSON line on stdout, flushed (the test reads them as they come)."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def _memory(store: Store, key: str, actor: str) -> tuple[str, bool]:
    claim = IdempotencyClaim(actor=actor, key=key, route="POST /api/v1/memories", request_sha256=key)
    fields = {"scope": "project", "kind": "fact", "title": f"idempotent {key}", "body_md": key}
    done = store.memory_admin.create(fields, actor=actor, claim=claim)
    return str(done.body["memory"]["id"]), done.replayed


def _scene(store: Store) -> str:
    task = store.tasks.create(title="two hosts", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="two hosts", patch=_DIFF, actor="implementer-1"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return str(proposal["id"])


def _writes(store: Store, proposal_id: str, count: int, prefix: str) -> None:
    for i in range(count):
        key = f"{prefix}-{i}"
        say(sending=key)
        memory_id, replayed = _memory(store, key, "operator")
        say(ack="idem", key=key, memory_id=memory_id, replayed=replayed)
        vote = store.reviews.cast(
            proposal_id=proposal_id,
            agent_id=("reviewer-1", "reviewer-2")[i % 2],
            vote="abstain",
            reason_md=f"{prefix} {i}",
            actor="op",
        )
        say(ack="vote", id=vote.vote.id)


async def _serve(store: Store) -> None:
    async with Supervisor(store, spec_transform=_hang) as supervisor, supervisor.warm(0):
        owner = supervisor._owner
        say(ready=owner.name, engine=owner.engine, host=getattr(owner, "host", ""))
        async with anyio.create_task_group() as tg:

            async def launch(proposal_id: str) -> None:
                def on_phase(phase: str, details: dict[str, Any]) -> None:
                    say(phase=phase, launch_id=details.get("launch_id"))

                try:
                    await supervisor.launch_role("memory_oracle", proposal_id, timeout=300, on_phase=on_phase)
                except Exception as exc:
                    say(launch_error=str(exc))

            stdin = anyio.wrap_file(sys.stdin)
            async for line in stdin:
                command = json.loads(line)
                do = command["do"]
                if do == "scene":
                    say(scene=await store.db.run(_scene, store))
                elif do == "launch":
                    tg.start_soon(launch, command["proposal"])
                elif do == "writes":
                    count, prefix = command["count"], command["prefix"]
                    await store.db.run(_writes, store, command["proposal"], count, prefix)
                    say(done="writes")
                elif do == "replay":
                    for key in command["keys"]:
                        memory_id, replayed = await store.db.run(_memory, store, key, "operator")
                        say(replayed=replayed, key=key, memory_id=memory_id)
                    say(done="replay")
                elif do == "stop":
                    tg.cancel_scope.cancel()
                    break


def main(argv: list[str]) -> None:
    """Open the checkout ``argv[0]`` on the configured store and serve commands until ``stop``."""
    configure_logging(json_logs=True)  # to stderr: stdout carries the protocol
    store = open_store(ProjectPaths(Path(argv[0])))
    try:
        anyio.run(_serve, store)
    finally:
        store.close()
    say(stopped=True)


if __name__ == "__main__":
    main(sys.argv[1:])
