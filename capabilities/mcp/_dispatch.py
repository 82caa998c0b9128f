"""Calling a tool on behalf of a principal: policy, validation, handler, error translation.

Every transport (stdio, HTTP, a launch socket, the CLI) calls tools through :func:`call_tool`, so
the same call gets the same answer and the same errors everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from capabilities.mcp._registry import ToolCall, ToolRegistry
from capabilities.policy import is_allowed
from capabilities.principals import Principal
from capabilities.services import Services
from store.errors import Forbidden, InternalError, InvalidArgument, NotFound, RoundtableError, error_body
from store.events import acting_credential

__all__ = ["ToolOutcome", "call_tool"]

_log = structlog.get_logger("roundtable.tools")


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's JSON answer, or its structured error."""

    result: dict[str, Any] | None
    error: RoundtableError | None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.error is None

    def body(self) -> dict[str, Any]:
        """The JSON object returned to the caller: the result, or :func:`~store.errors.error_body`."""
        if self.error is not None:
            return error_body(self.error)
        assert self.result is not None
        return self.result


async def call_tool(
    services: Services,
    registry: ToolRegistry,
    principal: Principal | None,
    name: str,
    arguments: dict[str, Any] | None,
) -> ToolOutcome:
    """Authorise, validate and run one tool call; never raises for a caller's mistake.

    ``name`` may be a tool's canonical (dotted) name or its underscore alias: it is resolved to the
    canonical name first, and the policy is checked on that, so no spelling reaches a tool the
    caller's toolset excludes. A name that is no tool's is ``not_found``; a tool the caller may not
    call is ``forbidden``.
    """
    log = _log.bind(tool=name, principal=principal.name if principal else None)
    if principal is not None and principal.grant is not None:
        log = log.bind(grant_id=principal.grant.id, proposal_id=principal.grant.proposal_id)
    try:
        spec = registry.resolve(name) if isinstance(name, str) else None
        if spec is None:
            raise NotFound(f"no tool named {name!r}")
        if principal is None or not is_allowed(principal, spec.name):
            raise Forbidden(f"tool {name!r} is not available to this caller")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidArgument("arguments must be an object")
        args = spec.parse(arguments)
        # Every event and audit row the call writes names the credential it came through.
        with acting_credential(principal.credential_id):
            answer = await spec.handler(ToolCall(services=services, principal=principal, args=args))
        result = spec.answer(answer)
    except InternalError as exc:
        # Ours, but a failure rather than a refusal: the operator needs the chained cause.
        log.exception("tool.failed", code=exc.code)
        return ToolOutcome(None, exc)
    except RoundtableError as exc:
        log.info("tool.refused", code=exc.code)
        return ToolOutcome(None, exc)
    except Exception:
        # A bug, not a caller's mistake: the traceback goes to the log, never to the caller.
        log.exception("tool.crashed")
        return ToolOutcome(None, InternalError(f"{name} failed unexpectedly; see the server log"))
    log.debug("tool.ok")
    return ToolOutcome(result, None)
