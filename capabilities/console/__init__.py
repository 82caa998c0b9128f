"""The maintainers' web console (server-rendered HTML at ``/``)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.routing import BaseRoute

from capabilities.http_api.stream import EventBroadcaster
from capabilities.services import Services

__all__ = ["console_routes"]


def console_routes(
    services: Services, broadcaster: EventBroadcaster, *, changed: Callable[[], None]
) -> list[BaseRoute]:
    """The console's routes."""
    return []
