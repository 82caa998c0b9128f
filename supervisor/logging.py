"""Structured logs: structlog to stderr, JSON when stderr is not a terminal.

stdout belongs to command output (and, for ``roundtable mcp stdio``, to the MCP protocol), so
every log line goes to stderr. Lines are bound to ``launch_id``, ``proposal_id`` and
``grant_id`` where they apply, by the code that knows them.
"""

from __future__ import annotations

import logging
import os
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(*, verbose: bool = False, json_logs: bool | None = None) -> None:
    """Route structlog and the standard library's logging to stderr at one level."""
    level_name = os.environ.get("ROUNDTABLE_LOG_LEVEL", "DEBUG" if verbose else "WARNING").upper()
    level = getattr(logging, level_name, logging.WARNING)
    use_json = (not sys.stderr.isatty()) if json_logs is None else json_logs
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s", force=True
    )
