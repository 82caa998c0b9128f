"""Bearer-token authentication: from an ``Authorization`` header to a :class:`Principal`.

- :func:`issue_capability` mints a grant for a role bound to a proposal, with the role's tool
  allow-list from :mod:`capabilities.policy` (the store knows nothing of roles);
- :class:`Authenticator` turns a raw token into a principal on every request, from the grant or
  operator-token row (never from anything the client claims), optionally accepting only one
  grant (a launch socket serves its own launch and nobody else);
- :class:`BearerAuthMiddleware` guards the HTTP paths that need a caller (``/mcp``, ``/api``):
  exactly one ``Authorization: Bearer <token>`` header, no token-like query parameter, else a
  401 ``{"error": {"code": "unauthenticated", ...}}`` whose ``WWW-Authenticate`` challenge points
  at the protected-resource metadata (RFC 9728, :data:`PROTECTED_RESOURCE_METADATA_PATH`). On
  success it puts the principal at ``scope["roundtable.principal"]`` (where the MCP server and
  the HTTP API read it) and drops the header from the scope it passes on, so nothing downstream
  can log or echo the token.

Every HTTP request is authenticated afresh, so a grant revoked or expired between two tool calls
refuses the second one with 401.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import structlog

from capabilities.mcp import PRINCIPAL_SCOPE_KEY
from capabilities.policy import CAPABILITY_TOOLSETS, LAUNCH_ROLE_OF, MEMORY_ORACLE_ROLE, OPERATOR, agent_role
from capabilities.principals import Principal, PrincipalKind
from store import Store
from store.access import DEFAULT_GRANT_TTL_SECONDS, GrantRecord, IssuedToken, TokenRecord
from store.errors import InvalidArgument, Unauthenticated, error_body

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "DEFAULT_GRANT_TTL_SECONDS",
    "PRINCIPAL_SCOPE_KEY",
    "PROTECTED_RESOURCE_METADATA_PATH",
    "TOKEN_QUERY_PARAMETERS",
    "Authenticator",
    "BearerAuthMiddleware",
    "authenticate_request",
    "bearer_token",
    "issue_agent_token",
    "issue_capability",
    "principal_from_record",
    "refusal",
    "request_base_url",
]

TOKEN_QUERY_PARAMETERS = frozenset(
    {"access_token", "token", "bearer", "auth", "authorization", "api_key", "apikey", "key", "jwt"}
)
"""Query parameters refused on guarded paths: tokens travel only in the ``Authorization`` header."""

# The whole value, with fullmatch: "^...$" with match would let a trailing newline through.
_BEARER = re.compile(r"Bearer ([A-Za-z0-9_-]+)", re.IGNORECASE)
PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
"""Where the RFC 9728 metadata is served; ``/mcp``'s own document is this path plus ``/mcp``."""

# A Host header worth echoing into a challenge or a document: a name or IP literal, an optional port.
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?"
)
_OPTIONAL_WHITESPACE = " \t"  # what HTTP allows around a field value (RFC 9110, 5.6.3); not CR or LF
_log = structlog.get_logger("roundtable.auth")


def issue_capability(
    store: Store,
    *,
    proposal_id: str,
    role: str,
    actor: str,
    ttl_seconds: int = DEFAULT_GRANT_TTL_SECONDS,
    launch_id: str | None = None,
    agent_id: str | None = None,
) -> IssuedToken[GrantRecord]:
    """Mint a capability for ``role`` on ``proposal_id`` (blocking; use ``db.run`` from async code).

    The tools are the role's allow-list; the task and scopes come from the proposal row. The agent
    is the oracle's configured agent for ``memory_oracle``; a launched reviewer (``reviewer``,
    ``security``) names its roster agent, which must hold the matching voting role.
    """
    if role not in CAPABILITY_TOOLSETS:
        roles = sorted(CAPABILITY_TOOLSETS)
        raise InvalidArgument(f"unknown role {role!r}; capabilities exist for: {', '.join(roles)}")
    if role == MEMORY_ORACLE_ROLE:
        agent = agent_id or store.config.roles.memory_oracle.agent_id
    else:
        roster_role = store.config.agents.get(agent_id or "")
        if agent_id is None or LAUNCH_ROLE_OF.get(roster_role or "") != role:
            raise InvalidArgument(
                f"a {role} capability needs a roster agent whose role launches as {role}; got {agent_id!r}"
            )
        agent = agent_id
    return store.grants.mint_grant(
        proposal_id=proposal_id,
        role=role,
        agent_id=agent,
        tools=CAPABILITY_TOOLSETS[role],
        ttl_seconds=ttl_seconds,
        actor=actor,
        launch_id=launch_id,
    )


def principal_from_record(
    record: GrantRecord | TokenRecord, roster: Mapping[str, str] | None = None
) -> Principal:
    """The principal a verified grant, operator token or agent token stands for.

    An agent token's role is the agent's roster role (``roster``, the ``[agents]`` the service opened
    with), looked up on every use: a service restarted without the agent refuses its tokens.
    """
    if isinstance(record, TokenRecord):
        if record.agent_id is None:
            return Principal(
                kind=PrincipalKind.OPERATOR, name=record.name, role=OPERATOR, credential_id=record.id
            )
        role = (roster or {}).get(record.agent_id)
        if role is None:
            raise Unauthenticated(f"agent {record.agent_id!r} is no longer in the [agents] roster")
        return Principal(kind=PrincipalKind.AGENT, name=record.agent_id, role=role, credential_id=record.id)
    return Principal(
        kind=PrincipalKind.CAPABILITY,
        name=record.agent_id,
        role=record.role,
        grant=record,
        credential_id=record.id,
    )


def issue_agent_token(
    store: Store, *, name: str, agent_id: str, actor: str, ttl_seconds: int | None = None
) -> IssuedToken[TokenRecord]:
    """Mint an agent token for roster agent ``agent_id`` (blocking).

    The agent must be on the roster, in a role that acts through tokens
    (:func:`~capabilities.policy.agent_role`).
    """
    agent_role(store.config.agents, agent_id)
    return store.grants.mint_token(name=name, actor=actor, ttl_seconds=ttl_seconds, agent_id=agent_id)


class Authenticator:
    """Resolves bearer tokens against the store, reading the credential's row on every call.

    The read is two lookups by a unique index (tens of microseconds), so it runs on the event
    loop's thread (:meth:`~store.db.Database.run_inline`), which waits for no lock and moves to a
    worker thread when the database is busy: a thread hop per request would cost more than the
    read. Nothing is cached, so a grant revoked or expired by any process is refused on the next
    request, as before.

    With ``only_grant_id`` it accepts that one grant and refuses every other credential,
    operator tokens included: a per-launch socket answers only its own launch.
    """

    def __init__(self, store: Store, *, only_grant_id: str | None = None):
        self.store = store
        self.only_grant_id = only_grant_id

    async def authenticate(self, token: str) -> Principal:
        """The principal behind ``token``, or :class:`Unauthenticated`."""
        record = await self.store.db.run_inline(self.store.grants.authenticate, token)
        if self.only_grant_id is not None and (
            not isinstance(record, GrantRecord) or record.id != self.only_grant_id
        ):
            raise Unauthenticated("this channel accepts only the capability of its own launch")
        return principal_from_record(record, self.store.config.agents)


def bearer_token(headers: Sequence[tuple[bytes, bytes]], query_string: bytes) -> str:
    """The token of a request: exactly one ``Authorization: Bearer`` header, none in the query."""
    if _token_in_query(query_string):
        raise Unauthenticated("tokens are accepted only in the Authorization header, never in the URL")
    values = [value for name, value in headers if name.lower() == b"authorization"]
    if not values:
        raise Unauthenticated("missing Authorization: Bearer header")
    if len(values) > 1:
        raise Unauthenticated("more than one Authorization header")
    match = _BEARER.fullmatch(values[0].decode("latin-1").strip(_OPTIONAL_WHITESPACE))
    if match is None:
        raise Unauthenticated("malformed Authorization header; expected 'Bearer <token>'")
    return match.group(1)


def _token_in_query(query_string: bytes) -> bool:
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    return any(key.strip().lower() in TOKEN_QUERY_PARAMETERS for key, _ in pairs)


def _guarded(path: str, prefixes: Sequence[str]) -> bool:
    # Normalise the way a lenient router might (case, repeated slashes), so no spelling of a
    # guarded path slips past; guarding too much only costs a 401.
    normal = re.sub(r"/{2,}", "/", path).lower()
    return any(
        prefix == "" or normal == prefix or normal.startswith(prefix.rstrip("/") + "/") for prefix in prefixes
    )


class BearerAuthMiddleware:
    """ASGI middleware: authenticate guarded paths and put the principal into the scope."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticator: Authenticator,
        guarded_prefixes: Sequence[str] = ("/mcp", "/api"),
    ):
        self.app = app
        self.authenticator = authenticator
        self.guarded_prefixes = tuple(prefix.lower() for prefix in guarded_prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Authenticate one request (lifespan messages pass straight through)."""
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        # Nothing but this middleware may place a principal in the scope.
        child: dict[str, Any] = {key: value for key, value in scope.items() if key != PRINCIPAL_SCOPE_KEY}
        if not _guarded(str(scope.get("path", "")), self.guarded_prefixes):
            await self.app(child, receive, send)
            return
        try:
            if scope["type"] != "http":
                raise Unauthenticated("only HTTP requests are served here")
            principal = await authenticate_request(self.authenticator, scope)
        except Unauthenticated as exc:
            await _refuse(scope, send, exc)
            return
        child[PRINCIPAL_SCOPE_KEY] = principal
        child["headers"] = [
            (name, value) for name, value in scope["headers"] if name.lower() != b"authorization"
        ]
        await self.app(child, receive, send)


def request_base_url(scope: Mapping[str, Any]) -> str:
    """``scheme://host[:port]`` of a request: its ``Host`` header, else the address it arrived on.

    A ``Host`` that is not a plain name or IP literal with an optional port is ignored (the URL is
    echoed into a header and a JSON document); a request on a Unix socket without one gets
    ``localhost``, which is what HTTP clients on a socket send.
    """
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    hosts = [value for name, value in scope.get("headers", []) if name.lower() == b"host"]
    if len(hosts) == 1 and _HOST.fullmatch(host := hosts[0].decode("latin-1")):
        return f"{scheme}://{host}"
    server = scope.get("server")
    if isinstance(server, tuple | list) and len(server) == 2 and isinstance(server[1], int):
        host, port = str(server[0]), server[1]
        host = f"[{host}]" if ":" in host else host
        if _HOST.fullmatch(host):
            default = 443 if scheme == "https" else 80
            return f"{scheme}://{host}" + ("" if port == default else f":{port}")
    return f"{scheme}://localhost"


def _challenge(scope: Mapping[str, Any]) -> bytes:
    """The ``WWW-Authenticate`` value of a 401: where the metadata is, and why (RFC 6750, 3.1)."""
    metadata = f"{request_base_url(scope)}{PROTECTED_RESOURCE_METADATA_PATH}/mcp"
    challenge = f'Bearer realm="roundtable", resource_metadata="{metadata}"'
    headers, query = scope.get("headers", []), scope.get("query_string", b"")
    try:
        bearer_token(headers, query)
    except Unauthenticated:
        # No credentials (or another scheme's) get no error code; a botched bearer attempt does.
        values = [value for name, value in headers if name.lower() == b"authorization"]
        botched = len(values) > 1 or any(value.strip()[:6].lower() == b"bearer" for value in values)
        if botched or _token_in_query(query):
            challenge += ', error="invalid_request"'
    else:
        challenge += ', error="invalid_token"'  # well-formed, but unknown, expired or revoked
    return challenge.encode("latin-1")


async def authenticate_request(authenticator: Authenticator, scope: Mapping[str, Any]) -> Principal:
    """The principal of one HTTP request (an ASGI-shaped ``scope``: its ``headers``, ``query_string``
    and ``path``), or :class:`Unauthenticated`, logged; :func:`refusal` is the answer to send then.

    :class:`BearerAuthMiddleware` and the lean launch socket server authenticate through this.
    """
    try:
        token = bearer_token(scope.get("headers", []), scope.get("query_string", b""))
        return await authenticator.authenticate(token)
    except Unauthenticated as exc:
        _log.info("auth.refused", path=scope.get("path"), reason=exc.message)
        raise


def refusal(scope: Mapping[str, Any], exc: Unauthenticated) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of the 401 that answers ``exc`` (the challenge names the metadata)."""
    body = json.dumps(error_body(exc)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", _challenge(scope)),
        (b"cache-control", b"no-store"),
    ]
    return headers, body


async def _refuse(scope: Scope, send: Send, exc: Unauthenticated) -> None:
    if scope["type"] != "http":
        await send({"type": "websocket.close", "code": 1008})
        return
    headers, body = refusal(scope, exc)
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
