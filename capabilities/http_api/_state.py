"""What the API and console endpoints read from their app: one :class:`ApiState` per service.

The endpoints are module-level functions (the Starlette way); what they need beyond the request
(the services, the event broadcaster, the hook that says something was committed) is set once as
``app.state.api`` on every Starlette app that mounts them, and read back with :func:`api_state`.
A mounted sub-application is its own ``request.app``, so the web service sets it on the ``/api/v1``
app and on the root app that serves the console.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from capabilities.http_api._boundary import caller_of, operator_of
from capabilities.http_api._errors import encoded, json_response
from capabilities.services import Services
from store import Store
from store.errors import InternalError

if TYPE_CHECKING:
    from capabilities.http_api._stream import EventBroadcaster

__all__ = ["ApiState", "api_for", "api_state", "operator_api"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass(frozen=True)
class ApiState:
    """The services behind the endpoints of one web service, and its live-event plumbing."""

    services: Services
    broadcaster: EventBroadcaster
    changed: Callable[[], None]
    """Called after each commit, so the live stream and the resynthesis worker look now."""

    @property
    def store(self) -> Store:
        """The store every endpoint reads and writes through."""
        return self.services.store

    async def run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a blocking store call on a worker thread (:meth:`store.db.Database.run`)."""
        return await self.services.store.db.run(fn, *args, **kwargs)

    async def answer(
        self, fn: Callable[_P, Mapping[str, Any]], *args: _P.args, **kwargs: _P.kwargs
    ) -> Response:
        """Run a read on a worker thread and answer its JSON (encoded on that thread too)."""
        return json_response(await self.run(encoded, fn, *args, **kwargs))


def api_state(request: Request) -> ApiState:
    """The :class:`ApiState` of the app serving ``request`` (a 500 if the app was built without one)."""
    state = getattr(request.app.state, "api", None)
    if not isinstance(state, ApiState):
        raise InternalError("this app serves no API: app.state.api is not set")
    return state


def operator_api(request: Request) -> ApiState:
    """:func:`api_state` for a read by an operator (401/403 for anyone else, as :func:`operator_of`)."""
    operator_of(request)
    return api_state(request)


def api_for(request: Request, tool: str) -> ApiState:
    """:func:`api_state` for a read the policy allows as ``tool`` (401/403 otherwise: :func:`caller_of`)."""
    caller_of(request, tool)
    return api_state(request)
