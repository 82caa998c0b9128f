"""The ``openai`` provider against a real model server: llama.cpp with Gemma 3 270M, per launch.

Baseline, measured in the same run on the same proposal: the ``judge`` provider (embedded, no
model server). Prints each provider's launch time (request to cleaned-up result), the openai one
as a ratio of the judge's (the first, cold-cache one apart), the tokens the gateway accounted per
launch, the server's own prompt and generation rates (tokens/s from its log), and the build time
of ``make llama`` when its stamp recorded one. Usage: ``python -m benchmarks.bench_model_server
[--repeat N]``. Needs the Docker engine, the role image (``make image``) and ``make llama`` (or
``ROUNDTABLE_LLAMA_VENV``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks._timing import Timing
from benchmarks.bench_oracle import _proposal, _tool
from store import init_project, open_store
from supervisor._supervisor import Supervisor
from supervisor.logging import configure_logging
from tests.e2e.conftest import write_config
from tests.e2e.llama_server import LlamaServer, LlamaSetup, find_setup, generation_rates, running_server

_JUDGE, _OPENAI = "judge", "openai"


def _build_seconds(setup: LlamaSetup) -> str:
    stamp = setup.venv / ".installed"
    if stamp.exists():
        for line in stamp.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "build_seconds" and value.strip().isdigit():
                return f"{int(value)} s"
    return "not recorded (the virtualenv was not made by `make llama`)"


async def _run(repeat: int, setup: LlamaSetup, server: LlamaServer) -> None:
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        paths, _ = init_project(Path(tmp))
        write_config(
            paths,
            {
                "[providers.openai]base_url": json.dumps(server.base_url),
                "[providers.openai]model": json.dumps(server.model),
                "[providers.openai]api_key_env": '"RT_LLAMA_BENCH_NO_KEY"',
            },
        )
        store = open_store(paths)
        decision = {
            "scope": "project",
            "kind": "decision",
            "title": "All SQL goes through the query builder",
            "body_md": "Never build SQL strings by hand; use db.query_builder.",
        }
        await _tool(store, "memory.record", decision)
        proposal_id = await _proposal(store)
        samples: dict[str, list[float]] = {_JUDGE: [], _OPENAI: []}
        tokens: list[int] = []
        statuses: list[str] = []
        async with Supervisor(store) as supervisor:
            # Warm-up: the first openai launch also fills the server's prompt cache.
            await supervisor.launch_role("memory_oracle", proposal_id, provider=_JUDGE)
            start = time.perf_counter()
            await supervisor.launch_role("memory_oracle", proposal_id, provider=_OPENAI)
            cold = time.perf_counter() - start
            for _ in range(repeat):
                for provider in (_JUDGE, _OPENAI):
                    start = time.perf_counter()
                    result = await supervisor.launch_role("memory_oracle", proposal_id, provider=provider)
                    samples[provider].append(time.perf_counter() - start)
                    if provider == _OPENAI:
                        tokens.append(int((result.launch.usage or {}).get("total_tokens", 0)))
                        statuses.append(str(result.launch.status))
        store.close()

    judge = Timing("judge launch (baseline)", samples[_JUDGE])
    print(judge.line())
    print(Timing("openai launch, cold prompt cache (once)", [cold]).line(judge))
    print(Timing("openai launch through llama.cpp", samples[_OPENAI]).line(judge))
    print(f"{'openai tokens accounted per launch':<48} median {statistics.median(tokens):9.0f}")
    print(f"{'openai launch statuses':<48} {', '.join(sorted(set(statuses)))}")
    rated = (("server prompt evaluation (its log)", True), ("server generation (its log)", False))
    for label, prompt in rated:
        rates = generation_rates(server.log, prompt=prompt)
        if rates:
            print(f"{label:<48} median {statistics.median(rates):9.1f} tokens/s")
    print(f"{'make llama build time':<48} {_build_seconds(setup)}")


def main() -> None:
    """Start the server, run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup, reason = find_setup()
    if setup is None:
        raise SystemExit(reason)
    configure_logging()  # logs to stderr, so stdout holds only the figures
    with (
        tempfile.TemporaryDirectory(prefix="rt-llama-") as tmp,
        running_server(setup, Path(tmp) / "server.log") as server,
    ):
        anyio.run(_run, args.repeat, setup, server)


if __name__ == "__main__":
    main()
