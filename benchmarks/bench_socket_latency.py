"""Latency of a scoped tool call over a launch's Unix socket, beside a no-op tool, in the same run.

A MemoryOracle capability calls ``memory.query`` (searching only its task and project scopes) and
``bench.noop`` (a tool registered only here, answering ``{}``) alternately, over the per-launch Unix
socket app and streamable HTTP, with two clients in turn: the SDK's ``mcp.Client`` (which also
validates each answer against the tool's ``outputSchema``, in Python) and the runner's own lean
client (``roles._mcp_http`` over ``roles._unix_http``: what the oracle in its container calls with,
which does not). Both tools pay the same transport, JSON-RPC and per-request token verification;
the difference is the scoped query and its answer. Each round also times the store call alone
(``store.memory.query_core``, what the tool calls, with the same arguments and scopes, on this
thread), so the part of the difference that is the query's SQL shows beside the rest; and, with the
runner's client, two tools of the benchmark's that take the query apart: ``bench.answer`` answers
the query's answer, computed once (the answer's encoding, transfer and parsing, with no query), and
``bench.query_on_loop`` runs the same query on the event loop's thread (``memory.query`` without its
hop to a worker thread; only here: a query scans, and blocks the loop while it does). Prints p50/p95
of each, of the difference, and the p50 ratio of the query to the no-op per client, in wall time and
in the CPU time the process spent on the call (client, server and the store's worker thread alike:
on a machine whose cores other work contends for, the steadier of the two). Usage:
``python -m benchmarks.bench_socket_latency [--calls N] [--entries M] [--corpus C] [--server lean|sdk]``
(``sdk``: the SDK's launch app under uvicorn, what served the socket before the lean server).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import httpx2
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from referencing import Registry

import capabilities.policy as policy
from benchmarks._corpus import Corpus
from benchmarks._timing import percentile, time_together
from capabilities.mcp._registry import ToolArgs, ToolCall, ToolRegistry, ToolSpec
from capabilities.mcp.tools import all_tools
from capabilities.policy import Reach
from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, build_launch_app, serve_launch_socket, serving
from roles._mcp_http import McpHttpClient
from roles._unix_http import UnixHttpClient
from store import Store, init_project, open_store
from supervisor.logging import configure_logging

NOOP = "bench.noop"
ANSWER = "bench.answer"
ON_LOOP = "bench.query_on_loop"
PARTS = (ANSWER, ON_LOOP)
SDK_CLIENT = "SDK client"
RUNNER_CLIENT = "runner's client"
CLIENTS = (SDK_CLIENT, RUNNER_CLIENT)
CPU = " (CPU)"
PYDANTIC_SCHEMA = "SDK client's check of one answer: pydantic's schema"
ADVERTISED_SCHEMA = "SDK client's check of one answer: the outputSchema"
STORE_CALL = "store.memory.query_core alone"
_WORDS = "sql builder cache index migration auth token retry queue worker cursor deploy rollback".split()


class _NoArgs(ToolArgs):
    pass


async def _noop(call: ToolCall) -> dict[str, Any]:
    return {}


class _PartArgs(ToolArgs):
    label: str


def _parts(store: Store, queries: dict[str, dict[str, Any]], scopes: frozenset[str]) -> list[ToolSpec]:
    """The tools that take ``memory.query`` apart (see the module docstring), by query label."""
    answers = {
        label: {"entries": store.memory.query_core(**q, allowed_scopes=scopes)}
        for label, q in queries.items()
    }

    async def answer(call: ToolCall) -> dict[str, Any]:
        return answers[call.args.label]

    async def on_loop(call: ToolCall) -> dict[str, Any]:
        return {"entries": store.memory.query_core(**queries[call.args.label], allowed_scopes=scopes)}

    return [
        ToolSpec(ANSWER, "the query's answer, computed once", _PartArgs, answer, read_only=True),
        ToolSpec(ON_LOOP, "the query, on the event loop", _PartArgs, on_loop, read_only=True),
    ]


@contextmanager
def _noop_allowed_for_the_oracle() -> Iterator[None]:
    """Let the oracle role call the benchmark's no-op (and its :data:`PARTS`), for this process and
    this block only.

    The policy's table (``ACCESS``) gets a ``bound`` cell for each in the oracle's row, and
    the toolsets derived from it (``ROLE_TOOLSETS``, ``CAPABILITY_TOOLSETS``) get the tools, so the
    no-op passes exactly the checks ``memory.query`` passes.
    """
    role = policy.MEMORY_ORACLE_ROLE
    access = policy.ACCESS
    derived = (policy.ROLE_TOOLSETS, policy.CAPABILITY_TOOLSETS)
    originals = [toolsets[role] for toolsets in derived]
    oracle_row = MappingProxyType({**access[role], **dict.fromkeys((NOOP, *PARTS), Reach.BOUND)})
    setattr(policy, "ACCESS", MappingProxyType({**access, role: oracle_row}))  # noqa: B010 (Final elsewhere)
    for toolsets in derived:
        toolsets[role] = toolsets[role] | {NOOP, *PARTS}
    try:
        yield
    finally:
        setattr(policy, "ACCESS", access)  # noqa: B010
        for toolsets, original in zip(derived, originals, strict=True):
            toolsets[role] = original


def _seed(store: Store, entries: int, corpus: str = "vocabulary") -> tuple[str, str]:
    """A task, its proposal, and ``entries`` memory entries: a third in each of the task's scope,
    ``project`` and another task's scope (``vocabulary``); or the realistic corpus with a task's
    scope in place of a third of its task scopes (``realistic``)."""
    rng = random.Random(7)
    task = store.tasks.create(title="Benchmark task", actor="bench")
    diff = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n"
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Benchmark", patch=diff, actor="bench"
    )
    if corpus == "realistic":
        records = list(Corpus().entries(0, entries))
        for record in records:
            if record["scope"] != "project" and rng.random() < 0.5:
                record["scope"] = task.id
    else:
        records = [
            {
                "scope": rng.choice(["project", task.id, "T-elsewhere"]),
                "kind": rng.choice(["decision", "constraint", "fact"]),
                "title": " ".join(rng.choices(_WORDS, k=4)),
                "body_md": " ".join(rng.choices(_WORDS, k=40)),
            }
            for _ in range(entries)
        ]
    store.memory.record_many(records, actor="bench")
    return task.id, proposal["id"]


def _queries(corpus: str) -> dict[str, dict[str, Any]]:
    """What the oracle asks, by label: ``sql`` (in nearly every entry of the 13-word corpus), or,
    in the realistic corpus, what an oracle looks up for a patch: a code identifier and a
    technical word, as its lexical provider does (limit 20, stale entries left out)."""
    if corpus != "realistic":
        return {"memory.query 'sql'": {"query": "sql", "limit": 10}}
    terms = Corpus()
    lexical = {"limit": 20, "exclude_stale": True}
    return {
        f"memory.query '{terms.identifiers[40]}'": {"query": terms.identifiers[40], **lexical},
        "memory.query 'timeout'": {"query": "timeout", **lexical},
    }


Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _timed(call: Call, name: str, arguments: dict[str, Any]) -> tuple[Any, float, float]:
    """``call``'s result, its wall time and the process's CPU time over it (every thread's)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    result = await call(name, arguments)
    return result, time.perf_counter() - start, time.process_time() - start_cpu


async def _measure(
    store: Store, calls: int, entries: int, sock: str, corpus: str, server: str = "lean"
) -> dict[str, list[float]]:
    _, proposal_id = _seed(store, entries, corpus)
    issued = store.grants.mint_grant(
        proposal_id=proposal_id,
        role="memory_oracle",
        agent_id="memory-oracle-1",
        tools=policy.MEMORY_ORACLE_TOOLS | {NOOP, *PARTS},
        ttl_seconds=3600,
        actor="bench",
    )
    spec = ToolSpec(NOOP, "does nothing", _NoArgs, _noop, read_only=True, idempotent=True)
    queries = _queries(corpus)
    registry = ToolRegistry([*all_tools(), spec, *_parts(store, queries, issued.record.scopes)])
    services = Services(store=store)
    served: Any = (
        serving(build_launch_app(services, issued.record.id, registry=registry), uds=sock)
        if server == "sdk"
        else serve_launch_socket(LaunchSocketApp(services, issued.record.id, registry=registry), sock)
    )
    samples: dict[str, list[float]] = {}
    for client in CLIENTS:
        samples.update({f"{client}: {NOOP}": [], f"{client}: {NOOP}{CPU}": []})
        for label in queries:
            samples.update(
                {
                    f"{client}: {label}": [],
                    f"{client}: {label}: difference": [],
                    f"{client}: {label}{CPU}": [],
                }
            )
    samples.update({f"{label}: {STORE_CALL}": [] for label in queries})
    samples.update(
        {
            f"{RUNNER_CLIENT}: {label}: {part}{unit}": []
            for label in queries
            for part in PARTS
            for unit in ("", CPU)
        }
    )
    scopes = issued.record.scopes
    bearer = {"Authorization": f"Bearer {issued.token}"}
    async with (
        served,
        httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=sock), headers=bearer) as http,
        Client(streamable_http_client("http://localhost/mcp", http_client=http)) as sdk,
        UnixHttpClient(Path(sock), headers=bearer, timeout=60) as unix_http,
    ):
        runner = McpHttpClient(unix_http)
        await runner.list_tools()
        callers: dict[str, Call] = {SDK_CLIENT: sdk.call_tool, RUNNER_CLIENT: runner.call_tool}
        for round_ in range(calls + 30):  # 30 rounds of warm-up: connections, caches, SQLite's pages
            keep = round_ >= 30
            for client, call in callers.items():
                result, noop, noop_cpu = await _timed(call, NOOP, {})
                assert not result.is_error, result
                for label, query in queries.items():
                    result, scoped, scoped_cpu = await _timed(call, "memory.query", query)
                    assert not result.is_error, result
                    assert result.structured_content is not None, label
                    assert result.structured_content["entries"], label
                    if keep:
                        samples[f"{client}: {label}"].append(scoped)
                        samples[f"{client}: {label}: difference"].append(scoped - noop)
                        samples[f"{client}: {label}{CPU}"].append(scoped_cpu)
                for label in queries if client == RUNNER_CLIENT else ():
                    for part in PARTS:
                        result, wall, cpu = await _timed(call, part, {"label": label})
                        assert not result.is_error, result
                        if keep:
                            samples[f"{client}: {label}: {part}"].append(wall)
                            samples[f"{client}: {label}: {part}{CPU}"].append(cpu)
                if keep:
                    samples[f"{client}: {NOOP}"].append(noop)
                    samples[f"{client}: {NOOP}{CPU}"].append(noop_cpu)
            for label, query in queries.items():
                start = time.perf_counter()
                store.memory.query_core(**query, allowed_scopes=scopes)  # what the tool calls
                if keep:
                    samples[f"{label}: {STORE_CALL}"].append(time.perf_counter() - start)
    samples.update(_schema_checks(registry, result.structured_content, calls))
    return samples


def _schema_checks(registry: ToolRegistry, answer: dict[str, Any], repeat: int) -> dict[str, list[float]]:
    """The SDK client's check of one ``memory.query`` answer (a compiled jsonschema validator, as
    ``ClientSession.validate_tool_result`` builds it) against the advertised ``outputSchema`` and
    against pydantic's own schema of the same model (``$ref`` and ``anyOf``), in turn."""
    spec = registry.get("memory.query")
    assert spec is not None
    assert spec.result_model is not None
    pydantic_schema = spec.result_model.model_json_schema(mode="serialization")
    advertised = spec.output_schema()
    assert advertised is not None
    checks = []
    for label, schema in ((PYDANTIC_SCHEMA, pydantic_schema), (ADVERTISED_SCHEMA, advertised)):
        validator = validator_for(schema)(schema, registry=Registry())
        assert best_match(validator.iter_errors(answer)) is None, label
        checks.append((label, partial(_check, validator, answer)))
    return {timing.label: timing.samples for timing in time_together(*checks, repeat=repeat)}


def _check(validator: Any, answer: dict[str, Any]) -> None:
    best_match(validator.iter_errors(answer))


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500, help="calls of each tool")
    parser.add_argument("--entries", type=int, default=2000, help="memory entries in the project")
    parser.add_argument("--corpus", choices=("vocabulary", "realistic", "both"), default="both")
    parser.add_argument(
        "--server",
        choices=("lean", "sdk"),
        default="lean",
        help="the launch socket's server: the lean one (what launches use), or the SDK's app under uvicorn",
    )
    args = parser.parse_args()
    configure_logging(verbose=False)  # a debug line per call would be measured too
    for corpus in ("vocabulary", "realistic") if args.corpus == "both" else (args.corpus,):
        with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp, _noop_allowed_for_the_oracle():
            paths, _ = init_project(Path(tmp) / "proj")
            store = open_store(paths)
            try:
                sock = str(Path(tmp) / "launch.sock")
                samples = anyio.run(_measure, store, args.calls, args.entries, sock, corpus, args.server)
            finally:
                store.close()
        print(
            f"MCP over the launch Unix socket ({args.server} server), {corpus} corpus: "
            f"{args.calls} calls each, {args.entries} entries"
        )
        for label, values in samples.items():
            print(
                f"  {label:<60} p50 {percentile(values, 50) * 1000:8.3f} ms"
                f"   p95 {percentile(values, 95) * 1000:8.3f} ms"
            )
        for client in CLIENTS:
            for label in _queries(corpus):
                for unit in ("", CPU):
                    ratio = percentile(samples[f"{client}: {label}{unit}"], 50) / percentile(
                        samples[f"{client}: {NOOP}{unit}"], 50
                    )
                    print(f"  {client}: {label} / {NOOP}{unit} at p50: {ratio:.2f}x   goal <= 1.30x")
        for label in _queries(corpus):
            for part in PARTS:
                for unit in ("", CPU):
                    ratio = percentile(samples[f"{RUNNER_CLIENT}: {label}: {part}{unit}"], 50) / percentile(
                        samples[f"{RUNNER_CLIENT}: {NOOP}{unit}"], 50
                    )
                    print(f"  {RUNNER_CLIENT}: {label}: {part} / {NOOP}{unit} at p50: {ratio:.2f}x")
        ratio = percentile(samples[ADVERTISED_SCHEMA], 50) / percentile(samples[PYDANTIC_SCHEMA], 50)
        print(f"  {ADVERTISED_SCHEMA} / pydantic's at p50: {ratio:.2f}x")
        print()


if __name__ == "__main__":
    main()
