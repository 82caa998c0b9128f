"""Entry point of the role image: ``python -m roles.runner``.

For now the runner only identifies itself; the MCP client that talks to the supervisor over the
per-launch socket comes with the launcher.

* ``--version`` prints ``roundtable-role <version>`` and exits 0 (used to smoke-test the image);
* with no arguments it reports that no channel is configured and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

__all__ = ["EXIT_NO_CHANNEL", "main", "role_version"]

EXIT_NO_CHANNEL = 2
"""Exit status when the runner starts without a launch channel."""


def role_version() -> str:
    """The installed ``roundtable`` distribution's version, or ``0+unknown`` outside an install."""
    try:
        return version("roundtable")
    except PackageNotFoundError:
        return "0+unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the role runner with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = argparse.ArgumentParser(prog="roles.runner", description="Roundtable role runner.")
    parser.add_argument("--version", action="version", version=f"roundtable-role {role_version()}")
    parser.parse_args(argv)
    print("roles.runner: no launch channel configured; nothing to do", file=sys.stderr)
    return EXIT_NO_CHANNEL


if __name__ == "__main__":
    sys.exit(main())
