"""The ``roundtable`` command line: the parser, one module per command group, output.

Importing this package imports nothing else of the command: :func:`run` tries the quick hand-off
path first (:mod:`supervisor.cli._quick`), and builds the full parser (:mod:`supervisor.cli._main`)
only when that path does not serve the command line.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["run"]


def run() -> NoReturn:
    """Console-script entry point (also ``python -m supervisor``)."""
    from supervisor.cli._quick import discard_prestart, quick_main

    status = quick_main(sys.argv[1:])
    if status is None:
        from supervisor.cli._main import main

        try:
            status = main(exit_when_answered=True)
        finally:
            discard_prestart()  # one the launch did not take (an error, say)
    sys.exit(status)
