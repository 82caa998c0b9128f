"""Access: ``roundtable token ...``, ``roundtable capability ...`` and ``roundtable serve``.

Tokens and capabilities are minted by the local operator; the raw token is printed once, in the
answer of the command that minted it, and stored only as its SHA-256. ``serve`` runs the service
app (MCP streamable HTTP at ``/mcp``, the HTTP API at ``/api/v1`` and the web console, built by
:func:`capabilities.serving._web.build_service_app`) on loopback TCP or a Unix socket; a
non-loopback bind needs ``--allow-remote`` and TLS: served here (``--tls-cert``/``--tls-key``) or by
a proxy in front (``--behind-tls-proxy``), so bearer tokens never cross a network in clear. It also
keeps a supervisor started for the project, with its warm pool (``[supervisor] warm_pool``), and
takes the launches of local commands handed to it (:mod:`supervisor.cli._handoff_server`).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from supervisor.cli._choices import add_lazy_choice
from supervisor.cli._project import open_project, open_services, resolve_id
from supervisor.cli.commands import LazyRenderer, add_command
from supervisor.cli.commands._mcp import add_tool_names_option

if TYPE_CHECKING:
    import ssl

    from capabilities.serving import BoundAddress

__all__ = ["DEFAULT_PORT", "register", "serve_banner"]

DEFAULT_PORT = 8765
LOCAL_OPERATOR = "operator"


# -- tokens ----------------------------------------------------------------------------------------


def _token_create(args: argparse.Namespace) -> dict[str, Any]:
    with open_project(args.root) as store:
        if args.agent is None:
            issued = store.grants.mint_token(name=args.name, actor=LOCAL_OPERATOR, ttl_seconds=args.ttl)
        else:
            from capabilities.auth import issue_agent_token  # the MCP SDK is imported only when needed

            issued = issue_agent_token(
                store, name=args.name, agent_id=args.agent, actor=LOCAL_OPERATOR, ttl_seconds=args.ttl
            )
    return {
        **issued.record.to_dict(),
        "token_id": issued.record.id,
        "token": issued.token,
        "note": "store this token now: it is shown once and kept only as a hash",
    }


def _token_list(args: argparse.Namespace) -> dict[str, Any]:
    with open_project(args.root) as store:
        return {"tokens": [record.to_dict() for record in store.grants.list_tokens()]}


def _token_revoke(args: argparse.Namespace) -> dict[str, Any]:
    with open_project(args.root) as store:
        token_id = resolve_id(store, "token", args.token_id)
        record, revoked = store.grants.revoke_token(token_id, actor=LOCAL_OPERATOR)
    return {"token": record.to_dict(), "revoked": revoked}


# -- capabilities ----------------------------------------------------------------------------------


def _capability_grant(args: argparse.Namespace) -> dict[str, Any]:
    from capabilities.auth import issue_capability  # the MCP SDK is imported only when needed
    from store.access import DEFAULT_GRANT_TTL_SECONDS

    ttl = DEFAULT_GRANT_TTL_SECONDS if args.ttl is None else args.ttl
    with open_project(args.root) as store:
        proposal_id = resolve_id(store, "proposal", args.proposal)
        issued = issue_capability(
            store, proposal_id=proposal_id, role=args.role, actor=LOCAL_OPERATOR, ttl_seconds=ttl
        )
    grant = issued.record
    return {
        "grant_id": grant.id,
        "token": issued.token,
        "expires_at": grant.expires_at,
        "tools": sorted(grant.tools),
        "scopes": sorted(grant.scopes),
        "role": grant.role,
        "agent_id": grant.agent_id,
        "proposal_id": grant.proposal_id,
        "task_id": grant.task_id,
    }


def _capability_revoke(args: argparse.Namespace) -> dict[str, Any]:
    with open_project(args.root) as store:
        grant_id = resolve_id(store, "grant", args.grant_id)
        grant, revoked = store.grants.revoke(grant_id, actor=LOCAL_OPERATOR, reason=args.reason)
    return {"grant": grant.to_dict(), "revoked": revoked}


def _capability_list(args: argparse.Namespace) -> dict[str, Any]:
    with open_project(args.root) as store:
        proposal_id = None if args.proposal is None else resolve_id(store, "proposal", args.proposal)
        grants = store.grants.list_grants(proposal_id=proposal_id, active_only=args.active)
    return {"grants": [grant.to_dict() for grant in grants]}


# -- serve -----------------------------------------------------------------------------------------


async def _serve(args: argparse.Namespace) -> dict[str, Any]:
    # Imported here: every other command would otherwise pay for the MCP SDK and uvicorn.
    import anyio
    import structlog

    from capabilities.mcp import tool_naming
    from capabilities.serving import WebService, assume_https, build_service_app, prepare_shutdown, serve_asgi
    from supervisor._supervisor import Supervisor
    from supervisor.cli._handoff_server import handoff_listener
    from supervisor.models import synthesizer_for
    from supervisor.review import ReviewService

    tls = _server_tls(args)  # every refusal and bad file is an error here, before anything binds
    with open_services(args.root) as services:
        synthesizer, provider = synthesizer_for(services.store.config)
        web = WebService(services, synthesizer=synthesizer, provider=provider)
        naming = tool_naming(args.tool_names, services.store.config)
        app = build_service_app(  # /mcp, /api/v1, console
            services, web=web, allowed_hosts=args.allowed_host, tool_names=naming
        )
        where: dict[str, Any] = (
            {"uds": args.uds} if args.uds else {"host": args.host, "port": args.port, "tls": tls}
        )
        served = assume_https(app) if args.behind_tls_proxy else app
        # One supervisor for the service's life: its warm pool, the rounds its tools run, and the
        # launches local commands hand to it.
        async with Supervisor(services.store) as supervisor, supervisor.warm():
            services.review_runner = ReviewService(services.store, supervisor=supervisor)
            async with handoff_listener(supervisor), anyio.create_task_group() as tg:
                address: BoundAddress = await tg.start(
                    partial(serve_asgi, served, on_shutdown=partial(prepare_shutdown, app), **where)
                )
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    # Announced once Ctrl-C is ours: a client that stops us at once gets a clean stop.
                    _announce(address, as_json=args.json, root=args.root, proxy=args.behind_tls_proxy)
                    async for received in signals:
                        structlog.get_logger("roundtable.serve").warning(
                            "serve.stopping", signal=signal.Signals(received).name
                        )
                        break
                tg.cancel_scope.cancel()
    return {"stopped": True, "url": address.base_url, "uds": address.uds}


def _server_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """Check the bind and the TLS flags, and load the certificate and key (or refuse, naming the fix)."""
    from capabilities.serving import check_bind_host, load_server_tls
    from store.errors import InvalidArgument

    if (args.tls_cert is None) != (args.tls_key is None):
        raise InvalidArgument("--tls-cert and --tls-key go together: give the certificate and its key")
    wants_tls = args.tls_cert is not None
    if args.uds is not None:
        if wants_tls:
            raise InvalidArgument("TLS is served on TCP only; a Unix socket never leaves this machine")
        return None
    check_bind_host(
        args.host, allow_remote=args.allow_remote, tls=wants_tls, behind_tls_proxy=args.behind_tls_proxy
    )
    return load_server_tls(args.tls_cert, args.tls_key).context if wants_tls else None


def _announce(address: BoundAddress, *, as_json: bool, root: str | None, proxy: bool = False) -> None:
    """Say where the service listens and how to get in, on stderr (stdout carries only the answer)."""
    if as_json:
        tls = "served" if address.tls else "proxy" if proxy else "none"
        ready = {"event": "serve.ready", "url": address.base_url, "mcp": address.mcp_url, "tls": tls}
        line = json.dumps(ready)
    else:
        lines = serve_banner(address, root=root)
        if proxy:
            lines.insert(1, "  TLS is terminated by the proxy in front: clients use its https:// address")
        line = "\n".join(lines)
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def serve_banner(address: BoundAddress, *, root: str | None = None) -> list[str]:
    """The lines ``serve`` prints once it listens: the MCP, API and console URLs, and the token."""
    base = address.base_url
    where = f"serving on Unix socket {address.uds} (as {base})" if address.uds else f"serving {base}"
    mint = "roundtable token create --name NAME" + (f" --root {root}" if root else "")
    return [
        where,
        f"  MCP (streamable HTTP)  {address.mcp_url}",
        f"  HTTP API               {base}/api/v1",
        f"  web console            {base}/",
        f"every request needs a bearer token: mint one with `{mint}`",
        "  (add --agent AGENT_ID for an agent's own token); paste it on the console's sign-in page,",
        "  or send it as `Authorization: Bearer <token>`. Ctrl-C stops.",
    ]


def _ttl(value: str) -> int:
    from store.access import MAX_TTL_SECONDS

    ttl = int(value)
    if not 1 <= ttl <= MAX_TTL_SECONDS:
        raise argparse.ArgumentTypeError(f"must lie between 1 and {MAX_TTL_SECONDS}")
    return ttl


def _capability_roles() -> list[str]:
    from capabilities.policy import CAPABILITY_TOOLSETS

    return sorted(CAPABILITY_TOOLSETS)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``token``, ``capability`` and ``serve``."""
    token = add_command(commands, "token", common)
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", parser_class=type(token))
    token_sub.required = True
    create = token_sub.add_parser(
        "create",
        parents=[common],
        help="mint an operator token, or with --agent an agent token (printed once)",
    )
    create.add_argument(
        "--name", required=True, help="the token's name (an operator's: X-Actor-ID on the API)"
    )
    create.add_argument(
        "--agent",
        metavar="AGENT_ID",
        default=None,
        help="bind the token to this roster agent ([agents]): it acts as that agent, with its role's tools",
    )
    create.add_argument("--ttl", type=_ttl, default=None, help="seconds until it expires (default: never)")
    create.set_defaults(handler=_token_create, render=LazyRenderer("_render_access", "render_token"))
    listing = token_sub.add_parser(
        "list", parents=[common], help="operator and agent tokens (never the tokens)"
    )
    listing.set_defaults(handler=_token_list, render=LazyRenderer("_render_access", "render_token_list"))
    revoke = token_sub.add_parser("revoke", parents=[common], help="revoke an operator or agent token")
    revoke.add_argument("token_id")
    revoke.set_defaults(handler=_token_revoke, render=LazyRenderer("_render_access", "render_token_revoked"))

    capability = add_command(commands, "capability", common)
    cap_sub = capability.add_subparsers(
        dest="capability_command", metavar="ACTION", parser_class=type(capability)
    )
    cap_sub.required = True
    grant = cap_sub.add_parser("grant", parents=[common], help="mint a capability for a role on a proposal")
    grant.add_argument("--proposal", required=True, metavar="P")
    add_lazy_choice(grant, "--role", load=_capability_roles, required=True)
    # default None, filled in by the handler: the default lives in store.access, not imported here.
    grant.add_argument("--ttl", type=_ttl, default=None, metavar="SECONDS")
    grant.set_defaults(handler=_capability_grant, render=LazyRenderer("_render_access", "render_grant"))
    cap_revoke = cap_sub.add_parser("revoke", parents=[common], help="revoke a capability")
    cap_revoke.add_argument("grant_id")
    cap_revoke.add_argument("--reason", default="revoked by operator")
    cap_revoke.set_defaults(
        handler=_capability_revoke, render=LazyRenderer("_render_access", "render_grant_revoked")
    )
    cap_list = cap_sub.add_parser("list", parents=[common], help="capability grants, newest first")
    cap_list.add_argument("--proposal", default=None, metavar="P")
    cap_list.add_argument("--active", action="store_true", help="only grants neither expired nor revoked")
    cap_list.set_defaults(
        handler=_capability_list, render=LazyRenderer("_render_access", "render_grant_list")
    )

    serve = add_command(commands, "serve", common)
    serve.add_argument("--host", default="127.0.0.1", help="TCP address (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 picks one)"
    )
    serve.add_argument("--uds", default=None, metavar="PATH", help="serve on this Unix socket instead of TCP")
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (other machines can connect); it also needs --tls-cert and "
        "--tls-key, or --behind-tls-proxy",
    )
    serve.add_argument(
        "--tls-cert",
        default=None,
        metavar="FILE",
        help="serve HTTPS with this PEM certificate chain (with --tls-key)",
    )
    serve.add_argument(
        "--tls-key", default=None, metavar="FILE", help="the certificate's PEM key (unencrypted)"
    )
    serve.add_argument(
        "--behind-tls-proxy",
        action="store_true",
        help="plain HTTP here because a proxy in front terminates TLS (allows a remote bind without --tls-*)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="an extra Host header value to accept (host or host:*), for remote clients",
    )
    add_tool_names_option(serve)
    serve.set_defaults(handler=_serve, render=LazyRenderer("_render_access", "render_stopped"))
