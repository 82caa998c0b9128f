"""Build-time check of the role image's virtualenv (run by deploy/Dockerfile in its build stage).

Fails the build, with the import error, unless:

* every module under ``roles`` imports, and so do the MCP client path the runner takes, the SDK
  modules of the bridge (``roles.bridge``: the low-level server on stdio) and of the agents built on
  the image (the stdio client), and pytest (the test reviewer's default command is
  ``python -m pytest``);
* nothing of the supervisor side is installed: Roundtable's other packages, the Docker SDK, the
  server stack the ``mcp`` package would otherwise pull in, or a ``tests`` package;
* every module of the virtualenv has bytecode, compiled at build time (the image runs with a
  read-only root filesystem, so bytecode can never be written later).
"""

import importlib
import importlib.util
import pkgutil
import sys
import sysconfig
from pathlib import Path

ABSENT = ("supervisor", "store", "capabilities", "tests", "docker", "uvicorn", "requests")


def main() -> int:
    """Run the three checks; print one line per failure and return the exit status."""
    import roles

    for module in pkgutil.walk_packages(roles.__path__, "roles."):
        importlib.import_module(module.name)
    # The runner imports its MCP client lazily, inside the launch.
    importlib.import_module("mcp.client.streamable_http")
    from mcp import Client  # noqa: F401

    # The bridge serves MCP on stdio with the low-level server; agents built on the image start it
    # with the stdio client. Named here too, so a lazy import in either cannot slip past the build.
    for name in ("mcp.server.lowlevel", "mcp.server.stdio", "mcp.client.stdio", "roles.bridge"):
        importlib.import_module(name)
    # The test reviewer runs `python -m pytest` in the staged workspace.
    importlib.import_module("pytest")

    failures = [f"{name} is installed" for name in ABSENT if importlib.util.find_spec(name) is not None]
    site = Path(sysconfig.get_path("purelib"))
    failures += [
        f"no bytecode for {source}"
        for source in site.rglob("*.py")
        if not Path(importlib.util.cache_from_source(str(source))).is_file()
    ]
    for failure in failures:
        print(f"check: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
