"""Review rounds: the wall time of a round with N test reviewers (and the oracle) against one launch.

Baseline, measured in the same run: one MemoryOracle launch on the same kind of proposal (the
floor a round pays: a round is its launches, run at once). Each round runs ``review run`` in
process on a fresh proposal of a git project with one test, with N configured test reviewers
(``python -m pytest -q``) plus the oracle, under ``max_concurrent_launches = 8``, with consensus
out of reach so that every launch runs to its end.

Usage: ``python -m benchmarks.bench_review_round [--repeat N]``. Needs the Docker engine and the
role image (``make image``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from capabilities.services import Services
from store import Store, init_project, open_store
from supervisor._supervisor import Supervisor
from supervisor.cli._project import operator_call
from supervisor.logging import configure_logging
from supervisor.review import run_review

_USERS = "def double(x):\n    return 2 * x\n"
_TEST = "from app.users import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
_PATCH = """\
--- a/app/users.py
+++ b/app/users.py
@@ -1,2 +1,3 @@
 def double(x):
+    \"\"\"Twice x.\"\"\"
     return 2 * x
"""
_SIZES = (1, 2, 4)


def _project(tmp: Path, reviewers: int) -> Store:
    paths, _ = init_project(tmp)
    root = paths.root
    (root / "app").mkdir()
    (root / "app" / "users.py").write_text(_USERS)
    (root / "tests").mkdir()
    (root / "tests" / "test_users.py").write_text(_TEST)
    (root / ".gitignore").write_text(".roundtable/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    for argv in (["init", "-q"], ["add", "app", "tests", ".gitignore"], ["commit", "-qm", "seed"]):
        subprocess.run(["git", *argv], cwd=root, check=True, env=env, capture_output=True)
    agents = [f"reviewer-{n}" for n in range(1, reviewers + 1)]
    text = paths.config_file.read_text().replace("max_concurrent_launches = 4", "max_concurrent_launches = 8")
    # No consensus: an accepted proposal would end the round's other launches early.
    text = text.replace("required_approvals = 2 ", "required_approvals = 100 ")
    roster = '"reviewer-1" = "Reviewer"\n"reviewer-2" = "Reviewer"\n'
    text = text.replace(roster, "".join(f'"reviewer-{n}" = "Reviewer"\n' for n in range(1, 5)))
    command = '["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]'
    for agent in agents:
        text += f'\n[launches."{agent}"]\nkind = "test"\ncommand = {command}\n'
    paths.config_file.write_text(text)
    return open_store(paths)


async def _proposal(store: Store) -> str:
    services = Services(store=store)
    task = await operator_call(services, "task.create", {"title": "bench"})
    created = await operator_call(
        services,
        "proposal.create",
        {"task_id": task["task"]["id"], "agent_id": "implementer-1", "title": "doc", "patch": _PATCH},
    )
    return str(created["proposal"]["id"])


async def _measure(store: Store, repeat: int, *, round_: bool) -> list[float]:
    samples = []
    async with Supervisor(store) as supervisor:
        for index in range(repeat + 1):  # the first is a warm-up
            proposal_id = await _proposal(store)
            start = time.perf_counter()
            if round_:
                run = await run_review(supervisor, proposal_id)
                assert all(o.launch and o.launch["status"] == "exited" for o in run.launches), run.to_dict()
            else:
                await supervisor.launch_role("memory_oracle", proposal_id)
            if index:
                samples.append(time.perf_counter() - start)
    return samples


async def _run(repeat: int) -> None:
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="rt-bench-round-") as tmp:
        store = _project(Path(tmp) / "one", 0)
        results["one oracle launch (baseline)"] = await _measure(store, repeat, round_=False)
        store.close()
        for size in _SIZES:
            store = _project(Path(tmp) / f"n{size}", size)
            results[f"round: oracle + {size} test reviewer(s)"] = await _measure(store, repeat, round_=True)
            store.close()
    baseline = statistics.median(results["one oracle launch (baseline)"])
    print(f"{os.cpu_count()} CPUs; medians of {repeat} runs each")
    for label, samples in results.items():
        median = statistics.median(samples)
        print(f"{label:<44} median {median * 1000:9.1f} ms  x{median / baseline:5.2f} of one launch")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    configure_logging()  # logs to stderr, so stdout holds only the figures
    anyio.run(_run, args.repeat)


if __name__ == "__main__":
    main()
