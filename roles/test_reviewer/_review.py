"""One test review: the manifest, the version check, the run, the vote and its reason, ``main``."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from roles.channel import DEFAULT_CHANNEL_DIR, ChannelError, ChannelPaths, open_tool_channel
from roles.test_reviewer._sandbox import (
    CommandResult,
    WorkspaceRefused,
    command_environment,
    extract_workspace,
    run_command,
)
from roles.tools import McpToolCaller, ToolCallError

__all__ = [
    "EXIT_REFUSED",
    "MANIFEST_FILE",
    "MAX_MANIFEST_BYTES",
    "TAIL_CHARS",
    "TAIL_LINES",
    "WORKSPACE_FILE",
    "Manifest",
    "main",
    "reason_markdown",
]

EXIT_REFUSED = 4
"""The exit status when no vote is cast because the version differs, or a tool refused."""
MANIFEST_FILE = "review.json"
WORKSPACE_FILE = "workspace.tar"
MAX_MANIFEST_BYTES = 1024**2
TAIL_LINES = 40
"""The reason quotes at most this many of the output's last lines ..."""
TAIL_CHARS = 3000
"""... and at most this many characters of them."""


class _ReviewerError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _valid_command(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(a, str) and a for a in value)


def _positive(value: object) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


@dataclass(frozen=True)
class Manifest:
    """What ``review.json`` says about the staged tree."""

    proposal_id: str
    patch_version: int
    patch_sha256: str
    command: tuple[str, ...]
    timeout_seconds: float
    applied: bool
    apply_error: str | None

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        """Parse and check a manifest; ``ValueError`` naming the first field that is wrong."""
        body: Any = json.loads(data)
        if not isinstance(body, dict):
            raise ValueError("it is not a JSON object")
        version = body.get("patch_version")
        checks = {
            "proposal_id": isinstance(body.get("proposal_id"), str) and bool(body["proposal_id"]),
            "patch_version": isinstance(version, int) and not isinstance(version, bool) and version >= 1,
            "patch_sha256": isinstance(body.get("patch_sha256"), str),
            "command": _valid_command(body.get("command")),
            "timeout_seconds": _positive(body.get("timeout_seconds")),
            "applied": isinstance(body.get("applied"), bool),
            "apply_error": body.get("apply_error") is None or isinstance(body["apply_error"], str),
        }
        wrong = [name for name, ok in checks.items() if not ok]
        if wrong:
            raise ValueError(f"{wrong[0]} is missing or not valid")
        return cls(
            body["proposal_id"], body["patch_version"], body["patch_sha256"], tuple(body["command"]),
            float(body["timeout_seconds"]), body["applied"], body.get("apply_error"),
        )  # fmt: skip


# -- the reason -----------------------------------------------------------------------------------


def _longest_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _fenced(text: str) -> str:
    fence = "`" * max(3, _longest_run(text) + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _code(text: str) -> str:
    ticks = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _tail(output: str) -> str:
    tail = "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])
    if len(tail) > TAIL_CHARS:
        tail = tail[-TAIL_CHARS:]
        tail = tail.split("\n", 1)[1] if "\n" in tail else tail
    return tail


def reason_markdown(manifest: Manifest, result: CommandResult | None) -> tuple[str, str]:
    """The vote and its Markdown reason: ``approve`` iff the patch applied and the command exited 0."""
    command, version = _code(shlex.join(manifest.command)), manifest.patch_version
    if result is None or not manifest.applied:
        error = (manifest.apply_error or "no reason given").strip()
        head = (
            f"**The patch does not apply.** Patch version {version} does not apply to the project's "
            f"tracked files at HEAD, so {command} was not run:"
        )
        return "revise", f"{head}\n\n{_fenced(_tail(error))}\n"
    if result.timed_out:
        vote, head = "revise", f"**Timed out.** {command} timed out after {manifest.timeout_seconds:g} s"
    elif result.exit_code == 0:
        vote, head = "approve", f"**Passed.** {command} exited 0"
    elif result.exit_code is not None and result.exit_code < 0:
        vote, head = "revise", f"**Failed.** {command} was killed by signal {-result.exit_code}"
    else:
        vote, head = "revise", f"**Failed.** {command} exited {result.exit_code}"
    head += f" on patch version {version} ({result.seconds:.1f} s)."
    tail = _tail(result.output)
    body = f"The last lines of its output:\n\n{_fenced(tail)}" if tail else "It printed nothing."
    return vote, f"{head}\n\n{body}\n"


# -- the channel ----------------------------------------------------------------------------------


async def _require_version(caller: McpToolCaller, manifest: Manifest) -> None:
    """:data:`EXIT_REFUSED` unless the proposal's current patch version is the manifest's."""
    current = await caller.call("patch.inspect", {"max_bytes": 1})
    seen = (current.get("proposal_id"), current.get("version"), current.get("sha256"))
    if seen != (manifest.proposal_id, manifest.patch_version, manifest.patch_sha256):
        raise _ReviewerError(
            EXIT_REFUSED,
            f"the staged tree is not the version under review: the manifest has {manifest.proposal_id} "
            f"v{manifest.patch_version} ({manifest.patch_sha256[:12]}), the current patch is {seen[0]} "
            f"v{seen[1]} ({str(seen[2])[:12]}); no vote cast",
        )


async def _check(paths: ChannelPaths, manifest: Manifest) -> None:
    async with open_tool_channel(paths) as channel:
        await _require_version(McpToolCaller(channel.client), manifest)


async def _vote(paths: ChannelPaths, manifest: Manifest, vote: str, reason_md: str) -> None:
    async with open_tool_channel(paths) as channel:
        caller = McpToolCaller(channel.client)
        await _require_version(caller, manifest)  # again: a new version may have come meanwhile
        arguments = {"proposal_id": manifest.proposal_id, "vote": vote, "reason_md": reason_md}
        await caller.call("vote.cast", arguments)


# -- one review -----------------------------------------------------------------------------------


def _load_manifest(path: Path) -> Manifest:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise _ReviewerError(1, f"cannot read the manifest {path} ({exc.strerror})") from None
    try:
        if len(data) > MAX_MANIFEST_BYTES:
            raise ValueError(f"it is larger than {MAX_MANIFEST_BYTES} bytes")
        return Manifest.from_json(data)
    except ValueError as exc:  # json.JSONDecodeError included
        raise _ReviewerError(1, f"the manifest {path} is not usable: {exc}") from None


def _run_in_scratch(channel_dir: Path, manifest: Manifest) -> CommandResult:
    with tempfile.TemporaryDirectory(prefix="roundtable-review-") as scratch:
        work, home, tmp = (Path(scratch) / name for name in ("work", "home", "tmp"))
        for directory in (work, home, tmp):
            directory.mkdir()
        try:
            extract_workspace(channel_dir / WORKSPACE_FILE, work)
        except (WorkspaceRefused, OSError) as exc:
            raise _ReviewerError(1, f"the workspace is refused: {exc}") from None
        try:
            env = command_environment(home, tmp)
            return run_command(manifest.command, work, timeout=manifest.timeout_seconds, env=env)
        except OSError as exc:
            raise _ReviewerError(1, f"cannot run {shlex.join(manifest.command)}: {exc}") from None


async def _review(channel_dir: Path, paths: ChannelPaths) -> dict[str, Any]:
    paths.read_token()  # no channel or no grant: say so before any work
    manifest = _load_manifest(channel_dir / MANIFEST_FILE)
    await _check(paths, manifest)
    result = None
    if manifest.applied:
        result = await anyio.to_thread.run_sync(_run_in_scratch, channel_dir, manifest)
    vote, reason_md = reason_markdown(manifest, result)
    await _vote(paths, manifest, vote, reason_md)
    return {
        "vote": vote,
        "exit_code": None if result is None else result.exit_code,
        "timed_out": result is not None and result.timed_out,
        "patch_version": manifest.patch_version,
        "duration_seconds": 0.0 if result is None else round(result.seconds, 3),
    }


def _innermost(exc: BaseException) -> BaseException:
    """The error inside the exception groups the MCP client's task groups wrap it in."""
    known = (_ReviewerError, ChannelError, ToolCallError)
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        ours = [e for e in exc.exceptions if isinstance(_innermost(e), known)]
        exc = ours[0] if ours else exc.exceptions[0]
    return exc


def _channel(argv: Sequence[str] | None) -> tuple[Path, ChannelPaths]:
    parser = argparse.ArgumentParser(prog="roles.test_reviewer", description="Roundtable's test reviewer.")
    parser.add_argument(
        "--channel-dir",
        type=Path,
        default=None,
        help=f"the launch directory (default: $ROUNDTABLE_CHANNEL_DIR, else {DEFAULT_CHANNEL_DIR})",
    )
    args = parser.parse_args(argv)
    if args.channel_dir is not None:
        directory: Path = args.channel_dir
        return directory, ChannelPaths(directory / "mcp.sock", directory / "token")
    directory = Path(os.environ.get("ROUNDTABLE_CHANNEL_DIR") or DEFAULT_CHANNEL_DIR)
    return directory, ChannelPaths.from_environment()


def main(argv: Sequence[str] | None = None) -> int:
    """Review the staged workspace and vote (``argv`` default: ``sys.argv[1:]``); return the exit status."""
    channel_dir, paths = _channel(argv)
    try:
        report = anyio.run(_review, channel_dir, paths)
    except Exception as exc:  # one line on stderr, no traceback
        cause = _innermost(exc)
        if isinstance(cause, ChannelError | _ReviewerError):
            print(f"roles.test_reviewer: {cause}", file=sys.stderr)
            return cause.status
        if isinstance(cause, ToolCallError):
            print(f"roles.test_reviewer: refused: {cause}", file=sys.stderr)
            return EXIT_REFUSED
        print(f"roles.test_reviewer: failed: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    print(json.dumps(report, sort_keys=True))
    return 0
