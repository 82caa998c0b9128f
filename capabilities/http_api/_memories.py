"""The memory routes of ``/api/v1`` (the seed's endpoints, with its documented flaws fixed).

Each handler is thin: check the caller (reads and ``POST /memories`` as the MCP tool they mirror,
``memory.query`` and ``memory.record``; revisions, merges and lifecycle actions are curation, for
operators only), and for a mutation the actor header, the body and the idempotency key; hand the
store one call on a worker thread, answer with the store's JSON. The semantics live in
:mod:`store.memory._admin` and its sibling modules. Handlers are module-level and find the store in
``request.app.state`` (:func:`capabilities.http_api._state.api_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from capabilities.http_api._boundary import (
    mutation_context,
    parse_model,
    query_bool,
    query_int,
    query_text,
)
from capabilities.http_api._errors import endpoint, json_response
from capabilities.http_api._models import EmptyBody, MemoryCreate, ResynthesisCreate, RevisionCreate
from capabilities.http_api._state import ApiState, api_for, api_state
from store.errors import (
    InvalidExpectedRevision,
    InvalidMemory,
    InvalidMemoryTarget,
    InvalidRevision,
)
from store.events import Committed
from store.memory import ACTIONS

__all__ = ["MEMORY_ROUTES"]

_P = ParamSpec("_P")


async def _commit(
    api: ApiState, fn: Callable[_P, Committed], /, *args: _P.args, **kwargs: _P.kwargs
) -> Response:
    """Run one store mutation on a worker thread, say so, and answer what it committed."""
    committed = await api.run(fn, *args, **kwargs)
    api.changed()
    headers = {"idempotent-replayed": "true"} if committed.replayed else None
    return json_response(committed.body, committed.status, headers)


async def list_memories(request: Request) -> Response:
    """``GET /memories``: search and page through the entries."""
    api = api_for(request, "memory.query")
    return await api.answer(
        api.store.memory_admin.list,
        q=query_text(request, "q"),
        scope=query_text(request, "scope"),
        kind=query_text(request, "kind"),
        status=query_text(request, "status"),
        limit=query_int(request, "limit"),
        cursor=query_text(request, "cursor"),
    )


async def create_memory(request: Request) -> Response:
    """``POST /memories``: record a new entry."""
    ctx = await mutation_context(request, "memory.record")
    api = api_state(request)
    body = parse_model(MemoryCreate, ctx.body, error=InvalidMemory)
    return await _commit(
        api,
        api.store.memory_admin.create,
        body.fields(),
        actor=ctx.actor,
        claim=ctx.claim,
        writer=ctx.principal.memory_writer,
    )


async def get_memory(request: Request) -> Response:
    """``GET /memories/{memory_id}``: one entry (optionally following its aliases)."""
    api = api_for(request, "memory.query")
    follow = query_bool(request, "follow_aliases")
    return await api.answer(
        api.store.memory_admin.get, request.path_params["memory_id"], follow_aliases=follow
    )


async def create_revision(request: Request) -> Response:
    """``POST /memories/{memory_id}/revisions``: revise an entry at an expected revision."""
    ctx = await mutation_context(request)
    api = api_state(request)
    parse_model(
        RevisionCreate,
        ctx.body,
        error=InvalidRevision,
        field_errors={"expected_revision": InvalidExpectedRevision},
    )
    return await _commit(
        api,
        api.store.memory_admin.revise,
        request.path_params["memory_id"],
        ctx.body,
        actor=ctx.actor,
        claim=ctx.claim,
    )


async def list_revisions(request: Request) -> Response:
    """``GET /memories/{memory_id}/revisions``: every revision of an entry."""
    api = api_for(request, "memory.query")
    return await api.answer(api.store.memory_admin.revisions, request.path_params["memory_id"])


async def diff(request: Request) -> Response:
    """``GET /memories/{memory_id}/diff``: the diff between two revisions."""
    api = api_for(request, "memory.query")
    return await api.answer(
        api.store.memory_admin.diff,
        request.path_params["memory_id"],
        query_text(request, "from") or "1",
        query_text(request, "to") or "latest",
    )


async def graph(request: Request) -> Response:
    """``GET /memories/{memory_id}/graph``: an entry's links."""
    api = api_for(request, "memory.query")
    return await api.answer(api.store.memory_admin.graph, request.path_params["memory_id"])


async def source_chain(request: Request) -> Response:
    """``GET /memories/{memory_id}/source-chain``: where an entry came from, to a depth."""
    api = api_for(request, "memory.query")
    depth = query_int(request, "depth", default=1)
    assert depth is not None
    return await api.answer(
        api.store.memory_admin.source_chain, request.path_params["memory_id"], depth=depth
    )


def _target(request: Request) -> str:
    target = query_text(request, "target_id", limit=200)
    if target is None or not target.strip():
        raise InvalidMemoryTarget("target_id is required")
    return target.strip()


async def _merge(request: Request, *, legacy: bool) -> Response:
    ctx = await mutation_context(request)
    api = api_state(request)
    parse_model(EmptyBody, ctx.body)
    admin = api.store.memory_admin
    merge = admin.merge_legacy if legacy else admin.merge
    memory_id = request.path_params["memory_id"]
    return await _commit(api, merge, memory_id, _target(request), actor=ctx.actor, claim=ctx.claim)


async def merge(request: Request) -> Response:
    """``POST /memories/{memory_id}/merge?target_id=``: merge an entry into another."""
    return await _merge(request, legacy=False)


async def merge_legacy(request: Request) -> Response:
    """``POST /memories/{memory_id}/merge-legacy?target_id=``: the seed's merge, kept for old callers."""
    return await _merge(request, legacy=True)


@dataclass(frozen=True)
class MemoryAction:
    """The endpoint of one curation action: ``POST /memories/{memory_id}/<action>``."""

    action: str

    async def __call__(self, request: Request) -> Response:
        """Apply the action to the entry."""
        ctx = await mutation_context(request)
        api = api_state(request)
        parse_model(EmptyBody, ctx.body)
        admin = api.store.memory_admin
        memory_id = request.path_params["memory_id"]
        return await _commit(api, admin.act, memory_id, self.action, actor=ctx.actor, claim=ctx.claim)


async def resynthesize(request: Request) -> Response:
    """``POST /memories/{memory_id}/resynthesize``: ask for the entry to be resynthesised."""
    ctx = await mutation_context(request)
    api = api_state(request)
    body = parse_model(ResynthesisCreate, ctx.body)
    return await _commit(
        api,
        api.store.memory_admin.request_resynthesis,
        request.path_params["memory_id"],
        actor=ctx.actor,
        reason=body.reason,
        claim=ctx.claim,
    )


_ITEM = "/memories/{memory_id}"
MEMORY_ROUTES: list[Route] = [
    Route("/memories", endpoint(list_memories), methods=["GET"]),
    Route("/memories", endpoint(create_memory), methods=["POST"]),
    Route(_ITEM, endpoint(get_memory), methods=["GET"]),
    Route(f"{_ITEM}/revisions", endpoint(list_revisions), methods=["GET"]),
    Route(f"{_ITEM}/revisions", endpoint(create_revision), methods=["POST"]),
    Route(f"{_ITEM}/diff", endpoint(diff), methods=["GET"]),
    Route(f"{_ITEM}/graph", endpoint(graph), methods=["GET"]),
    Route(f"{_ITEM}/source-chain", endpoint(source_chain), methods=["GET"]),
    Route(f"{_ITEM}/merge", endpoint(merge), methods=["POST"]),
    Route(f"{_ITEM}/merge-legacy", endpoint(merge_legacy), methods=["POST"]),
    Route(f"{_ITEM}/resynthesize", endpoint(resynthesize), methods=["POST"]),
    *(
        Route(f"{_ITEM}/{action}", endpoint(MemoryAction(action)), methods=["POST"], name=f"{action}_memory")
        for action in ACTIONS
    ),
]
"""The memory routes, relative to ``/api/v1``."""
