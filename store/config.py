"""Project configuration: ``.roundtable/config.toml``.

``roundtable init`` writes :data:`DEFAULT_CONFIG_TOML`, every key present and commented. Loading
validates the file with pydantic (unknown keys are refused, so a typo is an error rather than a
silently ignored setting) and falls back to the defaults for keys a user removed.
"""

from __future__ import annotations

import functools
import ipaddress
import tomllib
from enum import StrEnum
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from store.errors import InvalidArgument

__all__ = [
    "DEFAULT_CONFIG_TOML",
    "EMBEDDED_PROVIDERS",
    "VOTING_ROLES",
    "ContainerConfig",
    "KubernetesConfig",
    "OpenAIProviderConfig",
    "PolicyConfig",
    "ProjectConfig",
    "ProviderName",
    "ReviewerKind",
    "ReviewerLaunchConfig",
    "RoleConfig",
    "StoreConfig",
    "load_config",
    "package_version",
]


@functools.cache
def package_version() -> str:
    """The installed version of the ``roundtable`` distribution, read once per process: reading it
    walks the installed distributions (~0.2 ms), and every launch's socket server names it."""
    try:
        return version("roundtable")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


class ProviderName(StrEnum):
    """The providers a role can run with (the role image's runner knows the same names)."""

    JUDGE = "judge"
    """Embedded and deterministic: judges each decision against what the patch adds and removes."""
    LEXICAL = "lexical"
    """Embedded word matching: a heuristic baseline, labelled as such in every warning."""
    OPENAI = "openai"
    """Any OpenAI-compatible chat-completions server, reached through the supervisor's gateway."""


EMBEDDED_PROVIDERS = frozenset({ProviderName.JUDGE, ProviderName.LEXICAL})
"""Providers that need no model server (and so no gateway, no key, no budget)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContainerConfig(_Strict):
    """How one launch's container is run: its image, deadline and limits."""

    image: str = Field(default_factory=lambda: f"roundtable-role:{package_version()}")
    timeout_seconds: float = Field(default=300, gt=0, le=86400)
    memory_limit: str = "512m"
    cpus: float = Field(default=1.0, gt=0, le=64)
    pids_limit: int = Field(default=128, ge=16, le=65536)
    nofile_limit: int = Field(default=1024, ge=64, le=1048576)


class RoleConfig(ContainerConfig):
    """How the MemoryOracle's container is run, and with which provider."""

    provider: ProviderName = ProviderName.JUDGE
    agent_id: str = "memory-oracle-1"


class ReviewerKind(StrEnum):
    """What runs in a launched reviewer's container."""

    TEST = "test"
    """The embedded test reviewer: runs ``command`` on the tree under review, votes on the result."""
    MCP = "mcp"
    """Your own MCP-speaking agent in ``image``, handed a standard MCP client configuration."""


VOTING_ROLES = frozenset({"Reviewer", "Security"})
"""The roster roles that vote, and so the roles a launched reviewer may have."""


class ReviewerLaunchConfig(ContainerConfig):
    """How one roster agent runs when a review round runs (``[launches."<agent id>"]``)."""

    kind: ReviewerKind
    command: list[str] = Field(default_factory=list, max_length=64)
    """``test``: the command to run in the tree (required); ``mcp``: the container's command
    (empty: the image's own)."""

    @model_validator(mode="after")
    def _check_command(self) -> ReviewerLaunchConfig:
        if self.kind is ReviewerKind.TEST and not self.command:
            raise ValueError(
                'a test reviewer needs a command, e.g. command = ["python", "-m", "pytest", "-q"]'
            )
        if any(not part or "\x00" in part or len(part) > 4096 for part in self.command):
            raise ValueError("command parts must be nonempty strings without NUL, at most 4096 characters")
        return self


class OpenAIProviderConfig(_Strict):
    """An OpenAI-compatible chat-completions server reached by the supervisor, never a container."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "your-model"
    api_key_env: str = "OPENAI_API_KEY"
    max_turns: int = Field(default=12, ge=1, le=200)
    max_tokens: int = Field(default=20000, ge=1)


class PolicyConfig(_Strict):
    """Review policy: consensus and which changes need a security reviewer."""

    required_approvals: int = Field(default=2, ge=1, le=100)
    security_risks: list[str] = Field(default_factory=lambda: ["high", "critical"])
    security_paths: list[str] = Field(
        default_factory=lambda: [
            ".env*",
            "**/.env*",
            "auth/**",
            "**/auth/**",
            "infra/**",
            "migrations/**",
            "**/migrations/**",
            "*.lock",
            "**/*.lock",
            "package-lock.json",
            "**/package-lock.json",
            "Dockerfile",
            "**/Dockerfile",
            ".github/workflows/**",
        ]
    )
    max_patch_bytes: int = Field(default=1048576, ge=1024, le=64 * 1048576)
    require_security_approval: bool = True
    max_apply_file_bytes: int = Field(default=16 * 1048576, ge=1024, le=1024 * 1048576)


class _Roles(_Strict):
    memory_oracle: RoleConfig = Field(default_factory=RoleConfig)


class _Mcp(_Strict):
    tool_names: Literal["dotted", "underscore"] = "dotted"
    """How ``tools/list`` spells tool names (``memory.query`` or ``memory_query``); both are callable."""


class _Providers(_Strict):
    openai: OpenAIProviderConfig = Field(default_factory=OpenAIProviderConfig)


class _Supervisor(_Strict):
    max_concurrent_launches: int = Field(default=4, ge=1, le=64)
    warm_pool: int = Field(default=2, ge=0, le=64)
    """Role containers ``roundtable serve`` keeps started and waiting for a launch (0: none)."""
    launcher: Literal["docker", "kubernetes"] = "docker"
    """Where launches run: the local Docker engine, or a cluster (``[kubernetes]``)."""

    lease_ttl_seconds: float = Field(default=15.0, ge=3.0, le=600.0)
    """PostgreSQL store: how long a supervisor's lease lives past its last heartbeat (every ttl/4)."""


_K8S_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_QUANTITY = r"^[0-9]{1,12}(\.[0-9]{1,6})?(Ki|Mi|Gi|Ti|k|M|G|T|m)?$"


class KubernetesConfig(_Strict):
    """How launches run on a cluster (``[kubernetes]``; used when ``[supervisor] launcher`` says so)."""

    namespace: str = Field(default="roundtable", pattern=_K8S_NAME)
    capability_url: str = Field(default="", max_length=2048)
    """The supervisor's capability endpoint as the pods reach it: ``https://host:port``, TLS only."""
    ca_file: str = ""
    """The PEM file of the CA that signed the endpoint's certificate (given to each pod)."""
    image: str = ""
    """The role image as the cluster pulls it (empty: the role's own ``image``)."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    memory_limit: str = ""
    """Caps the memory a launch gets (empty: the role's own ``memory_limit``)."""
    cpus: float | None = Field(default=None, gt=0, le=64)
    ephemeral_storage: str = Field(default="256Mi", pattern=_QUANTITY)
    tmp_size: str = Field(default="64Mi", pattern=_QUANTITY)
    supervisor_selector: dict[str, str] = Field(
        default_factory=lambda: {"app.kubernetes.io/name": "roundtable-supervisor"}
    )
    """The labels of the supervisor's pods, the only ones a role pod may reach (never empty)."""
    dns: bool = False
    """Let role pods ask the cluster's DNS (kube-system, port 53). Off: the DNS forwards any name
    outside, and a lookup is a way out; the pod finds the endpoint in its ``hostAliases`` instead."""
    capability_ip: str = ""
    """The address of ``capability_url``'s host for the pods' ``hostAliases`` (empty: the supervisor
    resolves the host at each launch; unused when ``dns`` is on or the URL names an address)."""
    kubeconfig: str = ""
    """A kubeconfig file (empty: the in-cluster service account, else ``~/.kube/config``)."""

    @field_validator("supervisor_selector", "capability_ip")
    @classmethod
    def _check(cls, value: dict[str, str] | str) -> dict[str, str] | str:
        if isinstance(value, str):
            return str(ipaddress.ip_address(value)) if value else value  # its ValueError says why
        if not value or not all(value.values()):
            raise ValueError("the supervisor's pod labels must not be empty (an empty selector is every pod)")
        return value


class StoreConfig(_Strict):
    """Where the store lives (``[store]``): the project's SQLite file, or a PostgreSQL schema."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    url: str = Field(default="", max_length=4096)
    """Empty (the SQLite file) or ``postgresql://...``; ``ROUNDTABLE_STORE_URL`` wins over it."""
    schema_name: str = Field(default="", alias="schema", pattern=r"^([a-z_][a-z0-9_]{0,62})?$")
    """PostgreSQL only: this project's schema; empty means ``rt_`` and a hash of the project root."""


def _default_agents() -> dict[str, str]:
    return {
        "implementer-1": "Implementer",
        "implementer-2": "Implementer",
        "reviewer-1": "Reviewer",
        "reviewer-2": "Reviewer",
        "security-1": "Security",
        "memory-oracle-1": "MemoryOracle",
    }


class ProjectConfig(_Strict):
    """The whole of ``config.toml``."""

    roles: _Roles = Field(default_factory=_Roles)
    mcp: _Mcp = Field(default_factory=_Mcp)
    providers: _Providers = Field(default_factory=_Providers)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    agents: dict[str, str] = Field(default_factory=_default_agents)
    supervisor: _Supervisor = Field(default_factory=_Supervisor)
    store: StoreConfig = Field(default_factory=StoreConfig)
    kubernetes: KubernetesConfig = Field(default_factory=KubernetesConfig)
    launches: dict[str, ReviewerLaunchConfig] = Field(default_factory=dict)
    """Roster agents that run in a container when a review round runs, by agent ID."""

    @model_validator(mode="after")
    def _check_launches(self) -> ProjectConfig:
        for agent_id in self.launches:
            role = self.agents.get(agent_id)
            if role not in VOTING_ROLES:
                raise ValueError(
                    f"launches.{agent_id}: a launched reviewer must be a roster agent in a voting role "
                    f"({', '.join(sorted(VOTING_ROLES))}); [agents] has it as {role!r}"
                )
        if self.supervisor.launcher == "kubernetes" and not self.kubernetes.capability_url.startswith(
            "https://"
        ):
            raise ValueError(
                'kubernetes.capability_url: [supervisor] launcher = "kubernetes" needs the https:// URL '
                "of the supervisor's capability endpoint (tokens never cross a network in clear)"
            )
        return self


def load_config(path: Path) -> ProjectConfig:
    """Read and validate ``config.toml``; a missing file means the defaults."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ProjectConfig()
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path}: not UTF-8 text") from None
    try:
        data = tomllib.loads(raw)
        return ProjectConfig.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"{path}: not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise InvalidArgument(f"{path}: arrays or tables nested too deeply") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise InvalidArgument(f"{path}: {problems}") from exc


DEFAULT_CONFIG_TOML = """\
# Roundtable project configuration. Every key is shown with its default.

[roles.memory_oracle]
image = "roundtable-role:{version}"   # the image `roundtable image build` produces
provider = "judge"                    # "judge" (embedded, judges each decision), "lexical" (word-matching
                                      # baseline) or "openai" (a model server through the gateway)
timeout_seconds = 300                 # the launch deadline; the container is killed after it
memory_limit = "512m"                 # memory and memory+swap limit of the container
cpus = 1.0                            # CPU quota of the container
pids_limit = 128                      # process limit of the container (a fork bomb stops here)
nofile_limit = 1024                   # open-file limit of the container
agent_id = "memory-oracle-1"          # the roster entry the oracle acts as

[providers.openai]                    # any OpenAI-compatible chat-completions server
base_url = "http://127.0.0.1:8000/v1"
model = "your-model"
# the supervisor reads the key from this variable; containers never see it
api_key_env = "OPENAI_API_KEY"
max_turns = 12                        # tool-calling turns per launch
max_tokens = 20000                    # token budget per launch, enforced by the supervisor

[mcp]
tool_names = "dotted"                 # how tools/list spells tool names: "dotted" (memory.query) or
                                      # "underscore" (memory_query, for clients that refuse dots);
                                      # both spellings are callable; --tool-names overrides it

[policy]
required_approvals = 2                # counting approvals needed, with no counting reject or veto
security_risks = ["high", "critical"] # risks that add the Security voting role
max_patch_bytes = 1048576             # the largest patch accepted
require_security_approval = true      # when Security votes, consensus needs one Security approval
max_apply_file_bytes = 16777216       # the largest project file patch.validate/patch.apply will read
# paths that add the Security voting role (glob patterns; ** crosses directories)
security_paths = [
  ".env*", "**/.env*", "auth/**", "**/auth/**", "infra/**", "migrations/**", "**/migrations/**",
  "*.lock", "**/*.lock", "package-lock.json", "**/package-lock.json", "Dockerfile", "**/Dockerfile",
  ".github/workflows/**",
]

[supervisor]
max_concurrent_launches = 4           # role containers running at once
warm_pool = 2                         # containers `roundtable serve` keeps started for the next
                                      # launches (no grant, no token); they count against the
                                      # limit above; 0 disables
launcher = "docker"                   # "docker" (the local engine) or "kubernetes" ([kubernetes]
                                      # below; see docs/kubernetes.md)
lease_ttl_seconds = 15                # PostgreSQL store: a supervisor whose lease is not renewed
                                      # (heartbeat every ttl/4) for this long is dead; others then
                                      # reap its launches (see docs/scaling.md)

[store]
url = ""                              # "" (the SQLite file .roundtable/roundtable.db) or
                                      # postgresql://user:password@host:port/database;
                                      # the environment variable ROUNDTABLE_STORE_URL wins over it
schema = ""                           # PostgreSQL: this project's schema ("": rt_ and a hash of the
                                      # project root); set it, the same on every host, when several
                                      # hosts share the project (see docs/scaling.md)

[kubernetes]                          # used when [supervisor] launcher = "kubernetes"
namespace = "roundtable"              # where role pods, their Secrets and NetworkPolicies go
capability_url = ""                   # https://host:port of `roundtable serve --tls-cert ...` as
                                      # pods reach it (required for the kubernetes launcher)
ca_file = ""                          # PEM CA of that endpoint's certificate, handed to each pod
image = ""                            # the role image as the cluster pulls it ("": the role's image)
image_pull_policy = "IfNotPresent"
memory_limit = ""                     # "": the role's memory_limit (cpus = 1.0, absent: the role's)
ephemeral_storage = "256Mi"           # the pod's ephemeral-storage limit
tmp_size = "64Mi"                     # the size of its /tmp (an in-memory emptyDir)
dns = false                           # let role pods query the cluster DNS (port 53): off, since
                                      # the DNS forwards names outside (a way out for a role)
capability_ip = ""                    # the address of capability_url's host, given to the pods as
                                      # a hostAliases entry ("": resolved by the supervisor at launch)
kubeconfig = ""                       # "": in-cluster service account, else ~/.kube/config
supervisor_selector = { "app.kubernetes.io/name" = "roundtable-supervisor" }

[agents]                              # the default roster; review candidates come from it
"implementer-1" = "Implementer"
"implementer-2" = "Implementer"
"reviewer-1" = "Reviewer"
"reviewer-2" = "Reviewer"
"security-1" = "Security"
"memory-oracle-1" = "MemoryOracle"

# Roster agents that run in a hardened container when `roundtable review run P` runs a round, one
# section per agent ID (a Reviewer or Security agent of [agents]). None by default: uncomment one.
# Every key but kind and command has the default shown.
#
# [launches."reviewer-1"]
# kind = "test"                       # "test": the embedded test reviewer (runs command on the
#                                     # tracked files with the patch applied, votes on the result);
#                                     # "mcp": your own MCP agent in image (see docs/containers.md)
# command = ["python", "-m", "pytest", "-q"]   # test: what to run; mcp: the container's command
#                                     # (empty: the image's own)
# image = "roundtable-role:{version}"
# timeout_seconds = 300               # the launch deadline; the container is killed after it
# memory_limit = "512m"
# cpus = 1.0
# pids_limit = 128
# nofile_limit = 1024
"""
