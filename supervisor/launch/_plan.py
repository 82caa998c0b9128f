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
from typing import TYPE_CHECKING

from store.errors import InvalidArgument
from supervisor.launch._spec import LaunchLimits, LaunchSpec

if TYPE_CHECKING:
    from store.config import ProjectConfig

__all__ = ["LaunchPlan", "oracle_plan"]

_MEMORY_ORACLE = "memory_oracle"


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


def oracle_plan(
    config: ProjectConfig, *, provider: str | None = None, timeout: float | None = None
) -> LaunchPlan:
    """The MemoryOracle's launch plan (``[roles.memory_oracle]``, with these overrides)."""
    from store.config import ProviderName

    role_config = config.roles.memory_oracle
    chosen = provider or role_config.provider
    if chosen not in set(ProviderName):
        names = ", ".join(ProviderName)
        raise InvalidArgument(f"unknown provider {chosen!r}; providers: {names}")
    deadline = float(timeout if timeout is not None else role_config.timeout_seconds)
    if not 0 < deadline <= 86400:
        raise InvalidArgument("timeout must be between 0 and 86400 seconds")
    return LaunchPlan(
        role=_MEMORY_ORACLE,
        agent_id=role_config.agent_id,
        provider=chosen,
        image=role_config.image,
        limits=LaunchLimits.from_role(role_config),
        deadline=deadline,
        command=("--provider", chosen, "--max-turns", str(config.providers.openai.max_turns)),
        environment={"ROUNDTABLE_PROVIDER": chosen},
        uses_model=chosen == ProviderName.OPENAI,
    )
