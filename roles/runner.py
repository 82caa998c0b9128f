"""Entry point of the role image: ``python -m roles.runner``.

Inside a role container the runner finds its launch channel in the read-only per-launch mount:
the Unix socket served by the supervisor and the grant's token file. It connects with the lean MCP
client of :mod:`roles._mcp_http` (streamable HTTP over the socket, the token in the
``Authorization`` header; the SDK's client costs more to import than the container costs to start),
lists its tools, runs the configured provider, and prints one JSON line with what it did.

Exit status: 0 done; 2 no launch channel (no socket); 3 no grant (no token file, or the
supervisor refused it); 4 the provider failed (a tool or the model gateway answered an error
it could not recover from); 1 anything else. Every failure prints one clear line on stderr; a
provider failure also prints one JSON line on stdout naming its reason,
``{"provider_failed": {"provider", "reason", "message"}}`` (the supervisor trusts its own model
gateway's record over it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roles._claim import wait_for_claim
from roles.channel import (
    DEFAULT_CHANNEL_DIR,
    EXIT_NO_CHANNEL,
    EXIT_NO_GRANT,
    ChannelError,
    ChannelPaths,
    http_client,
    open_tool_channel,
)
from roles.providers import PROVIDER_NAMES

__all__ = [
    "DEFAULT_CHANNEL_DIR",
    "EXIT_NO_CHANNEL",
    "EXIT_NO_GRANT",
    "EXIT_PROVIDER_FAILED",
    "RunnerConfig",
    "main",
    "role_version",
]

EXIT_PROVIDER_FAILED = 4


def _installed_version() -> str | None:
    """The version in the name of the ``roundtable_role-<version>.dist-info`` directory beside ``roles``.

    What ``importlib.metadata`` would find in the role image, for a directory listing instead of its
    imports (about a tenth of a second in the container, paid by every launch).
    """
    site = Path(__file__).resolve().parent.parent
    try:
        names = os.listdir(site)
    except OSError:
        return None
    for name in names:
        if name.startswith("roundtable_role-") and name.endswith(".dist-info"):
            return name.removeprefix("roundtable_role-").removesuffix(".dist-info")
    return None


def role_version() -> str:
    """The version of the installed runner, or ``0+unknown`` outside an install.

    The role image installs ``roles`` as the ``roundtable-role`` distribution; a host install has it
    inside ``roundtable``. Both carry the roundtable version.
    """
    installed = _installed_version()
    if installed is not None:
        return installed
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("roundtable-role", "roundtable"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "0+unknown"


@dataclass(frozen=True)
class RunnerConfig:
    """Where the channel is and which provider to run."""

    socket: Path
    token_file: Path
    provider: str
    max_turns: int
    model: str


class _RunnerError(Exception):
    def __init__(self, status: int, message: str, report: dict[str, object] | None = None):
        super().__init__(message)
        self.status = status
        self.report = report
        """The JSON line to print on stdout, if any."""


def _provider_failed(provider: str, reason: str, message: str) -> _RunnerError:
    failure = {"provider": provider, "reason": reason, "message": message}
    report: dict[str, object] = {"provider_failed": failure}
    return _RunnerError(EXIT_PROVIDER_FAILED, f"provider {provider} failed: {reason}: {message}", report)


class _VersionAction(argparse.Action):
    """``--version``, with the version looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"roundtable-role {role_version()}")
        parser.exit()


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's own, its width found without ``shutil``: argparse builds a formatter for every
    argument it adds, and its default one imports ``shutil`` (and with it ``bz2``, ``lzma``), about
    8 ms of every launch's start-up in the container, for help the runner prints only when asked."""

    def __init__(self, prog: str) -> None:
        try:
            columns = int(os.environ.get("COLUMNS") or os.get_terminal_size().columns)
        except (ValueError, OSError):
            columns = 80
        super().__init__(prog, width=max(columns - 2, 20))


def _config(argv: Sequence[str] | None) -> RunnerConfig:
    channel = Path(os.environ.get("ROUNDTABLE_CHANNEL_DIR", str(DEFAULT_CHANNEL_DIR)))
    parser = argparse.ArgumentParser(
        prog="roles.runner", description="Roundtable role runner.", formatter_class=_HelpFormatter
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--socket", type=Path, default=channel / "mcp.sock", help="the launch socket")
    parser.add_argument("--token-file", type=Path, default=channel / "token", help="the grant's token file")
    parser.add_argument(
        "--provider", default=os.environ.get("ROUNDTABLE_PROVIDER", "judge"), choices=list(PROVIDER_NAMES)
    )
    parser.add_argument("--max-turns", type=int, default=int(os.environ.get("ROUNDTABLE_MAX_TURNS", "12")))
    parser.add_argument("--model", default=os.environ.get("ROUNDTABLE_MODEL", "default"))
    args = parser.parse_args(argv)
    return RunnerConfig(args.socket, args.token_file, args.provider, args.max_turns, args.model)


async def _run(config: RunnerConfig, *, blocking: bool = False) -> dict[str, object]:
    # Only the configured provider's modules: a judge launch loads neither the model gateway's nor
    # the lexical baseline's.
    from roles.providers.openai import GatewayRefused
    from roles.tools import McpToolCaller, ToolCallError

    paths = ChannelPaths(config.socket, config.token_file)
    async with open_tool_channel(paths, client_version=role_version(), blocking=blocking) as channel:
        listed = channel.tools
        caller = McpToolCaller(channel.client)
        try:
            checked: list[dict[str, Any]] = []
            if config.provider != "judge":  # the judge evaluates checks itself
                from roles.providers.checks_step import run_checks

                checked = await run_checks(caller)
            if config.provider == "openai":
                from roles.gateway import SocketChatGateway
                from roles.providers.openai import ToolDescription, run_openai

                available = [ToolDescription(t.name, t.description or "", t.input_schema) for t in listed]
                async with http_client(paths) as http:
                    gateway = SocketChatGateway(http)
                    report = await run_openai(
                        caller, gateway, available, max_turns=config.max_turns, model=config.model
                    )
            elif config.provider == "judge":
                from roles.providers.judge import run_judge

                report = await run_judge(caller)
            else:
                from roles.providers.lexical import run_lexical

                report = await run_lexical(caller)
            report.warnings[:0] = checked
        except GatewayRefused as exc:
            raise _provider_failed(config.provider, exc.reason, exc.message) from None
        except ToolCallError as exc:
            raise _provider_failed(config.provider, "provider_failed", str(exc)) from None
    return {"tools": sorted(t.name for t in listed), **report.to_dict()}


def _start(config: RunnerConfig) -> dict[str, object]:
    """Run the provider: without an event loop on a socket unless it is ``openai`` (whose model
    gateway client is async; so is a TLS channel's), see :mod:`roles._blocking`."""
    if config.provider != "openai" and ChannelPaths(config.socket, config.token_file).url is None:
        from roles._blocking import run_blocking

        return run_blocking(_run(config, blocking=True))
    import anyio

    return anyio.run(_run, config)


def _innermost(exc: BaseException) -> BaseException:
    """The error inside the exception groups the MCP client's task groups wrap it in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        runner_errors = [e for e in exc.exceptions if isinstance(_innermost(e), _RunnerError | ChannelError)]
        exc = runner_errors[0] if runner_errors else exc.exceptions[0]
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    """Run the role runner with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    wait_for_claim()  # a pooled container waits here until a launch claims it (roles/_claim.py)
    config = _config(argv)
    try:
        result = _start(config)
    except Exception as exc:  # the one line a supervisor log shows; no traceback to parse
        cause = _innermost(exc)
        if isinstance(cause, ChannelError):
            print(f"roles.runner: {cause}", file=sys.stderr)
            return cause.status
        if isinstance(cause, _RunnerError):
            if cause.report is not None:
                print(json.dumps(cause.report, sort_keys=True))
            print(f"roles.runner: {cause}", file=sys.stderr)
            return cause.status
        print(f"roles.runner: failed: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The answer is out: end the process now, without the interpreter's teardown, so the container
    # stops (and the launch ends) as soon as the work is done.
    os._exit(status)
