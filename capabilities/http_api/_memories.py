"""The memory routes of ``/api/v1`` (the seed's endpoints, with its documented flaws fixed).

Each handler is thin: check the caller (and, for a mutation, the actor header, the body and the
idempotency key), hand the store one call on a worker thread, answer with the store's JSON. The
semantics live in :mod:`store.memory._admin` and its sibling modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from capabilities.http_api._boundary import (
    mutation_context,
    operator_of,
    parse_model,
    query_bool,
    query_int,
    query_text,
)
from capabilities.http_api._errors import encoded, endpoint, json_response
from capabilities.http_api._models import EmptyBody, MemoryCreate, ResynthesisCreate, RevisionCreate
from capabilities.services import Services
from store.errors import (
    InvalidArgument,
    InvalidExpectedRevision,
    InvalidMemory,
    InvalidMemoryTarget,
    InvalidRevision,
)
from store.events import Committed
from store.memory import ACTIONS

__all__ = ["memory_routes"]


def _answer(committed: Committed) -> Response:
    headers = {"idempotent-replayed": "true"} if committed.replayed else None
    return json_response(committed.body, committed.status, headers)


def memory_routes(services: Services, *, changed: Callable[[], None] = lambda: None) -> list[Route]:
    """The memory routes, relative to ``/api/v1``; ``changed`` is called after each commit."""
    store = services.store
    admin = store.memory_admin
    run = store.db.run

    async def list_memories(request: Request) -> Response:
        operator_of(request)
        answer = await run(
            encoded,
            admin.list,
            q=query_text(request, "q"),
            scope=query_text(request, "scope"),
            kind=query_text(request, "kind"),
            status=query_text(request, "status"),
            limit=query_int(request, "limit"),
            cursor=query_text(request, "cursor"),
        )
        return json_response(answer)

    async def create_memory(request: Request) -> Response:
        ctx = await mutation_context(request)
        body = parse_model(MemoryCreate, ctx.body, code=InvalidMemory.code)
        committed = await run(admin.create, body.fields(), actor=ctx.actor, claim=ctx.claim)
        changed()
        return _answer(committed)

    async def get_memory(request: Request) -> Response:
        operator_of(request)
        follow = query_bool(request, "follow_aliases")
        return json_response(
            await run(encoded, admin.get, request.path_params["memory_id"], follow_aliases=follow)
        )

    async def create_revision(request: Request) -> Response:
        ctx = await mutation_context(request)
        parse_model(
            RevisionCreate,
            ctx.body,
            code=InvalidRevision.code,
            field_codes={"expected_revision": InvalidExpectedRevision.code},
        )
        committed = await run(
            admin.revise, request.path_params["memory_id"], ctx.body, actor=ctx.actor, claim=ctx.claim
        )
        changed()
        return _answer(committed)

    async def list_revisions(request: Request) -> Response:
        operator_of(request)
        return json_response(await run(encoded, admin.revisions, request.path_params["memory_id"]))

    async def diff(request: Request) -> Response:
        operator_of(request)
        answer = await run(
            encoded,
            admin.diff,
            request.path_params["memory_id"],
            query_text(request, "from") or "1",
            query_text(request, "to") or "latest",
        )
        return json_response(answer)

    async def graph(request: Request) -> Response:
        operator_of(request)
        return json_response(await run(encoded, admin.graph, request.path_params["memory_id"]))

    async def source_chain(request: Request) -> Response:
        operator_of(request)
        depth = query_int(request, "depth", default=1)
        assert depth is not None
        return json_response(
            await run(encoded, admin.source_chain, request.path_params["memory_id"], depth=depth)
        )

    def _target(request: Request) -> str:
        target = query_text(request, "target_id", limit=200)
        if target is None or not target.strip():
            raise InvalidMemoryTarget("target_id is required")
        return target.strip()

    async def merge(request: Request) -> Response:
        ctx = await mutation_context(request)
        parse_model(EmptyBody, ctx.body, code=InvalidArgument.code)
        committed = await run(
            admin.merge, request.path_params["memory_id"], _target(request), actor=ctx.actor, claim=ctx.claim
        )
        changed()
        return _answer(committed)

    async def merge_legacy(request: Request) -> Response:
        ctx = await mutation_context(request)
        parse_model(EmptyBody, ctx.body, code=InvalidArgument.code)
        committed = await run(
            admin.merge_legacy,
            request.path_params["memory_id"],
            _target(request),
            actor=ctx.actor,
            claim=ctx.claim,
        )
        changed()
        return _answer(committed)

    def action_handler(action: str) -> Callable[[Request], Any]:
        async def act(request: Request) -> Response:
            ctx = await mutation_context(request)
            parse_model(EmptyBody, ctx.body, code=InvalidArgument.code)
            committed = await run(
                admin.act, request.path_params["memory_id"], action, actor=ctx.actor, claim=ctx.claim
            )
            changed()
            return _answer(committed)

        act.__name__ = f"{action}_memory"
        return act

    async def resynthesize(request: Request) -> Response:
        ctx = await mutation_context(request)
        body = parse_model(ResynthesisCreate, ctx.body, code=InvalidArgument.code)
        committed = await run(
            admin.request_resynthesis,
            request.path_params["memory_id"],
            actor=ctx.actor,
            reason=body.reason,
            claim=ctx.claim,
        )
        changed()
        return _answer(committed)

    item = "/memories/{memory_id}"
    routes = [
        Route("/memories", endpoint(list_memories), methods=["GET"]),
        Route("/memories", endpoint(create_memory), methods=["POST"]),
        Route(item, endpoint(get_memory), methods=["GET"]),
        Route(f"{item}/revisions", endpoint(list_revisions), methods=["GET"]),
        Route(f"{item}/revisions", endpoint(create_revision), methods=["POST"]),
        Route(f"{item}/diff", endpoint(diff), methods=["GET"]),
        Route(f"{item}/graph", endpoint(graph), methods=["GET"]),
        Route(f"{item}/source-chain", endpoint(source_chain), methods=["GET"]),
        Route(f"{item}/merge", endpoint(merge), methods=["POST"]),
        Route(f"{item}/merge-legacy", endpoint(merge_legacy), methods=["POST"]),
        Route(f"{item}/resynthesize", endpoint(resynthesize), methods=["POST"]),
    ]
    routes += [
        Route(f"{item}/{action}", endpoint(action_handler(action)), methods=["POST"]) for action in ACTIONS
    ]
    return routes
