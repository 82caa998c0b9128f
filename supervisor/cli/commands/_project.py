"""``roundtable init`` and ``roundtable demo``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from supervisor.cli.commands import add_command

__all__ = ["register"]


def _init(args: argparse.Namespace) -> dict[str, Any]:
    from store import init_project, open_store
    from supervisor.cli._project import add_to_gitignore, gitignore_state

    paths, created = init_project(args.root)
    store = open_store(paths)
    store.close()
    body: dict[str, Any] = {
        "root": str(paths.root),
        "state_dir": str(paths.state_dir),
        "created": created,
        "message": f"{'initialised' if created else 'already initialised'}: {paths.state_dir}",
    }
    ignored = gitignore_state(paths.root)
    if args.gitignore and ignored is False:
        add_to_gitignore(paths.root)
        body["gitignore"] = "added"
        _hint(f"added .roundtable/ to {paths.root / '.gitignore'}")
    elif ignored is False:
        # On stderr, as git prints its hints: stdout (and --json) stay the answer alone.
        _hint(
            ".roundtable/ is not ignored by git, so `git status` lists it as untracked: add it to"
            " .gitignore (`echo .roundtable/ >> .gitignore`, or run `roundtable init --gitignore`)"
        )
    return body


def _hint(text: str) -> None:
    sys.stderr.write(f"hint: {text}\n")
    sys.stderr.flush()


async def _demo(args: argparse.Namespace) -> dict[str, Any]:
    from supervisor.cli._demo import run_demo

    return await run_demo(args.root, keep=args.keep)


def _render_demo(body: dict[str, Any]) -> str:
    from supervisor.cli._demo_story import render_demo

    return render_demo(body)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``init`` and ``demo``."""
    init = add_command(commands, "init", common)
    init.add_argument(
        "--gitignore",
        action="store_true",
        help="in a git work tree, add .roundtable/ to .gitignore when git does not ignore it yet",
    )
    init.set_defaults(handler=_init)

    demo = add_command(commands, "demo", common)
    demo.add_argument("--keep", action="store_true", help="keep the scratch directory and print its path")
    demo.set_defaults(handler=_demo, render=_render_demo)
