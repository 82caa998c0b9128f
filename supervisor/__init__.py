"""The async supervisor: review rounds, role launches, Docker, the service process and the CLI.

Depends on :mod:`capabilities` and :mod:`store`; nothing imports this package. :class:`Supervisor`
is exported lazily, so that the CLI's light commands do not import the Docker SDK or the servers.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick

if TYPE_CHECKING:
    from typing import Any

    from supervisor._supervisor import Supervisor

__all__ = ["Supervisor"]


def __getattr__(name: str) -> Any:
    """Import :class:`Supervisor` on first use (PEP 562)."""
    if name == "Supervisor":
        from supervisor._supervisor import Supervisor

        return Supervisor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
