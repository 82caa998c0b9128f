"""The example agent image: an unmodified MCP agent built on the role image (``deploy/agents/example/``).

The role image ships the bridge (``python -m roles.bridge``) that a launch's ``mcp.json`` names, so
an agent image needs only its own program on top: ``FROM`` the role image, add the agent, set the
entry point. The example does exactly that with ``agent.py``, a small MCP client that reads the
configuration, inspects the patch and votes. It is built from the local role image alone (the
engine never pulls, and nothing is installed), so it builds wherever the role image exists.

The build context holds the example's ``Dockerfile`` and ``agent.py``, copied to a temporary
directory. The image is labelled like the role image (``org.opencontainers.image.*`` version,
revision and base, ``roundtable.source-hash`` over the copied files and the role image's id), with
``roundtable.example-agent=1`` instead of ``roundtable.role-image=1``. The image it replaces under
the same tag is removed (unless a container still uses it).

Everything here blocks; failures raise :class:`ImageBuildError`, or :class:`DockerUnavailableError`
when the engine cannot be reached.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import docker.errors

from supervisor.image._build import (
    ImageBuildResult,
    _client,
    _docker_build,
    _git_revision,
    _repo_root,
    role_image_tag,
)
from supervisor.image._common import ImageBuildError, Progress, get_image

__all__ = [
    "EXAMPLE_AGENT_DIR",
    "EXAMPLE_AGENT_REPOSITORY",
    "build_example_agent",
    "build_example_agent_image",
    "example_agent_tag",
]

EXAMPLE_AGENT_DIR = "deploy/agents/example"
"""Where the example agent's Dockerfile and program live in the checkout."""

EXAMPLE_AGENT_REPOSITORY = "roundtable-example-agent"
_FILES = ("Dockerfile", "agent.py")
_LABEL = "roundtable.example-agent=1"


def _quiet(line: str) -> None:
    """A progress callback that drops every line."""


def example_agent_tag() -> str:
    """The example agent image's tag for the installed version: ``roundtable-example-agent:<version>``."""
    return f"{EXAMPLE_AGENT_REPOSITORY}:{version('roundtable')}"


def build_example_agent_image(
    client: Any,
    *,
    role_image: str,
    tag: str,
    progress: Progress = _quiet,
    repo_root: Path | None = None,
) -> str:
    """Build ``deploy/agents/example/`` ``FROM role_image`` (a local tag or image id) as ``tag``.

    ``client`` is a docker SDK client. Returns the new image's id. The role image must exist
    locally: :class:`ImageBuildError` says to build it otherwise.
    """
    root = _repo_root(repo_root)
    base = get_image(client, role_image)
    if base is None:
        raise ImageBuildError(
            f"the role image {role_image} does not exist here; build it first (roundtable image build)"
        )
    with tempfile.TemporaryDirectory(prefix="roundtable-example-") as tmp:
        context = Path(tmp)
        digest = hashlib.sha256(f"base\0{base.id}\0".encode())
        for name in _FILES:
            try:
                data = (root / EXAMPLE_AGENT_DIR / name).read_bytes()
            except FileNotFoundError:
                raise ImageBuildError(f"{EXAMPLE_AGENT_DIR}/{name} is missing from {root}") from None
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
            (context / name).write_bytes(data)
        buildargs = {
            "ROLE_IMAGE": role_image,
            "VERSION": version("roundtable"),
            "REVISION": _git_revision(root),
            "SOURCE_HASH": digest.hexdigest(),
        }
        try:
            # offline: the base is local, so a failure carries no hint about pulling from a registry.
            return _docker_build(client, context, tag, buildargs, progress, offline=True)
        finally:
            try:
                client.images.prune(filters={"dangling": True, "label": _LABEL})
            except (docker.errors.DockerException, OSError) as exc:
                progress(f"image: could not prune old example agent images ({exc})")


def build_example_agent(
    *, progress: Progress, tag: str | None = None, role_image: str | None = None
) -> ImageBuildResult:
    """:func:`build_example_agent_image` with a client of its own (``roundtable image build-example``).

    ``tag`` defaults to :func:`example_agent_tag`, ``role_image`` to the role image's tag.
    """
    started = time.monotonic()
    tag = tag or example_agent_tag()
    client = _client()
    try:
        image_id = build_example_agent_image(
            client, role_image=role_image or role_image_tag(), tag=tag, progress=progress
        )
    finally:
        client.close()
    seconds = time.monotonic() - started
    progress(f"image: built {tag} ({image_id[7:19]}) in {seconds:.1f}s")
    return ImageBuildResult(tag, image_id, True, seconds)
