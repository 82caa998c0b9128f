"""The ``roundtable`` command line: the parser, one module per command group, output."""

from __future__ import annotations

from supervisor.cli._main import run

__all__ = ["run"]
