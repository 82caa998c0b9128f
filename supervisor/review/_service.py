"""The review runner a serving process hands its tools: one supervisor, started on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from store import Store

if TYPE_CHECKING:
    from supervisor._supervisor import Supervisor

__all__ = ["ReviewService"]


class ReviewService:
    """:class:`capabilities.services.ReviewRunner` for ``serve`` and ``mcp stdio``.

    The supervisor (and so the Docker SDK) starts on the first run, never before: a server that
    runs no rounds never talks to the engine. :meth:`aclose` releases it with the server.
    """

    def __init__(self, store: Store, *, supervisor: Supervisor | None = None):
        """``supervisor``: a started one to run rounds on (``serve``'s, with its warm pool), which
        stays its owner's to close."""
        self.store = store
        self._supervisor: Supervisor | None = supervisor
        self._owned = supervisor is None
        self._lock = anyio.Lock()

    async def _started(self) -> Supervisor:
        async with self._lock:
            if self._supervisor is None:
                from supervisor._supervisor import Supervisor

                supervisor = Supervisor(self.store)
                await supervisor.start()
                self._supervisor = supervisor
            return self._supervisor

    async def __call__(self, proposal_id: str, *, actor: str) -> dict[str, Any]:
        """Run the round of ``proposal_id`` (:func:`supervisor.review.run_review`) and answer it."""
        from supervisor.review._run import run_review

        run = await run_review(await self._started(), proposal_id, actor=actor)
        return run.to_dict()

    async def aclose(self) -> None:
        """Release the supervisor, if one was started."""
        if self._supervisor is not None and self._owned:
            await self._supervisor.aclose()
        self._supervisor, self._owned = None, True
