"""What one launch runs: the capability it is given and the container that uses it.

A :class:`LaunchPlan` is everything the supervisor needs to run a role for a proposal, decided
before anything is recorded: the launch role and the agent its capability acts as, the image and
its command, non-secret environment, limits and deadline, and the files the container reads beside
its socket and token. The MemoryOracle's plan comes from ``[roles.memory_oracle]``; a launched
reviewer's from ``[launches."<agent id>"]`` (:mod:`supervisor.review`). The supervisor turns a plan
into a :class:`~supervisor.launch.LaunchSpec` once the launch, its grant and its runtime directory
exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from supervisor.launch._spec import LaunchLimits, LaunchSpec

__all__ = ["LaunchPlan"]


@dataclass(frozen=True)
class LaunchPlan:
    """One launch to run (see the module docstring)."""

    role: str
    """The launch role: the capability's toolset (``memory_oracle``, ``reviewer``, ``security``)."""
    agent_id: str
    """The roster agent the capability acts as."""
    provider: str
    """What the launch record says ran: the oracle's provider, or a reviewer's kind."""
    image: str
    limits: LaunchLimits
    deadline: float
    command: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    """Written into the runtime directory (read-only in the container) before it starts."""
    uses_model: bool = False
    """Whether the launch gets the model gateway (and so the operator's API key's budget)."""

    def spec(self, launch_id: str, proposal_id: str, runtime_dir: Path, token: str) -> LaunchSpec:
        """The container spec of this plan for a recorded launch with its runtime directory."""
        return LaunchSpec(
            launch_id=launch_id,
            role=self.role,
            proposal_id=proposal_id,
            image=self.image,
            command=self.command,
            entrypoint=self.entrypoint,
            environment=dict(self.environment),
            runtime_dir=runtime_dir,
            limits=self.limits,
            timeout_seconds=self.deadline,
            redact=frozenset({token} if token else ()),
        )
