"""``roundtable init`` and ``roundtable demo``."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def _init(args: argparse.Namespace) -> dict[str, Any]:
    from store import init_project, open_store

    paths, created = init_project(args.root)
    store = open_store(paths)
    store.close()
    return {
        "root": str(paths.root),
        "state_dir": str(paths.state_dir),
        "created": created,
        "message": f"{'initialised' if created else 'already initialised'}: {paths.state_dir}",
    }


async def _demo(args: argparse.Namespace) -> dict[str, Any]:
    from supervisor.cli._demo import run_demo

    return await run_demo(args.root, keep=args.keep)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``init`` and ``demo``."""
    init = commands.add_parser("init", parents=[common], help="create .roundtable/ (idempotent)")
    init.set_defaults(handler=_init)

    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="the whole story in a scratch project: memory, proposal, oracle, timeline",
    )
    demo.add_argument("--keep", action="store_true", help="keep the scratch directory and print its path")
    demo.set_defaults(handler=_demo)
