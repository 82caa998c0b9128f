"""``roundtable image build [--offline]``, ``roundtable image build-example`` and ``roundtable doctor``.

The Docker SDK, the image builder and the store are imported by the handlers that use them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from store.errors import NotInitialized, RoundtableError
from supervisor.cli.commands import add_command

__all__ = ["register"]


def _progress(line: str) -> None:
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()


async def _build(args: argparse.Namespace) -> dict[str, Any]:
    import anyio.to_thread

    from supervisor.image import build_role_image

    result = await anyio.to_thread.run_sync(
        lambda: build_role_image(offline=args.offline, force=args.force, progress=_progress)
    )
    verb = "built" if result.built else "up to date"
    return {
        "image": {
            "tag": result.tag,
            "id": result.image_id,
            "built": result.built,
            "seconds": round(result.seconds, 2),
        },
        "message": f"{result.tag} {verb} ({result.image_id[:19]}, {result.seconds:.1f}s)",
    }


async def _build_example(args: argparse.Namespace) -> dict[str, Any]:
    import anyio.to_thread

    from supervisor.image import build_example_agent

    result = await anyio.to_thread.run_sync(lambda: build_example_agent(tag=args.tag, progress=_progress))
    return {
        "image": {"tag": result.tag, "id": result.image_id, "seconds": round(result.seconds, 2)},
        "message": f"{result.tag} built ({result.image_id[:19]}, {result.seconds:.1f}s)",
    }


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


async def _doctor(args: argparse.Namespace) -> dict[str, Any]:
    import anyio.to_thread

    checks = [
        await anyio.to_thread.run_sync(_check_docker),
        await anyio.to_thread.run_sync(_check_image),
        _check_runtime_dir(),
        await anyio.to_thread.run_sync(_check_database, args.root),
    ]
    ok = all(check["ok"] for check in checks)
    lines = [f"{'ok  ' if c['ok'] else 'FAIL'}  {c['name']:<12} {c['detail']}" for c in checks]
    return {"ok": ok, "checks": checks, "message": "\n".join(lines)}


def _check_docker() -> dict[str, Any]:
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=10)
        try:
            info = client.version()
        finally:
            client.close()
    except (docker.errors.DockerException, OSError) as exc:
        return _check("docker", False, f"cannot reach the Docker engine: {exc}")
    return _check("docker", True, f"engine {info.get('Version', '?')}, API {info.get('ApiVersion', '?')}")


def _check_image() -> dict[str, Any]:
    from supervisor.image import inspect_role_image, role_image_tag

    try:
        status = inspect_role_image()
    except RoundtableError as exc:
        return _check("role image", False, exc.message)
    if status is None:
        return _check(
            "role image", False, f"{role_image_tag()} is missing; run `roundtable image build --offline`"
        )
    hours = status.age_seconds / 3600
    return _check(
        "role image",
        True,
        f"{status.tag} {status.image_id[:19]}, built {hours:.1f} h ago from {status.revision or 'unknown'}",
    )


def _check_runtime_dir() -> dict[str, Any]:
    # The same RuntimeRoot launches use: it refuses a base too long for socket paths, and
    # ensure() creates (or checks) the private 0700 directories the launch directories go in.
    from supervisor.launch import RuntimeRoot

    try:
        root = RuntimeRoot("rtdoctor")
        probe = root.ensure()
        probe.rmdir()
    except (OSError, RoundtableError) as exc:
        return _check("runtime dir", False, f"launch directories cannot be made: {exc}")
    return _check("runtime dir", True, f"{root.base} is private and short enough for launch sockets")


def _check_database(root: str | None) -> dict[str, Any]:
    from store import find_project_root, open_store

    try:
        paths = find_project_root(root)
    except NotInitialized:
        return _check("database", True, "no project here (run `roundtable init`); nothing to check")
    # The store the project is configured for: its SQLite file, or its PostgreSQL schema. Store
    # errors name the server and database, never a password.
    try:
        store = open_store(paths)
    except RoundtableError as exc:
        return _check("database", False, exc.message)
    try:
        ok, detail = store.db.check()
    except RoundtableError as exc:
        ok, detail = False, f"{store.db.describe()}: {exc.message}"
    finally:
        store.close()
    return _check("database", ok, detail)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``image build``, ``image build-example`` and ``doctor``."""
    image = add_command(commands, "image", common)
    sub = image.add_subparsers(dest="image_command", metavar="ACTION", parser_class=type(image))
    sub.required = True
    build = sub.add_parser("build", parents=[common], help="build the role image (skipped when up to date)")
    build.add_argument("--offline", action="store_true", help="build the base with debootstrap; no registry")
    build.add_argument("--force", action="store_true", help="rebuild even when the image is up to date")
    build.set_defaults(handler=_build)
    example = sub.add_parser(
        "build-example",
        parents=[common],
        help="build the example agent image (deploy/agents/example) on the local role image",
    )
    example.add_argument("--tag", help="the image tag (default: roundtable-example-agent:<version>)")
    example.set_defaults(handler=_build_example)

    doctor = add_command(commands, "doctor", common)
    doctor.set_defaults(handler=_doctor)
