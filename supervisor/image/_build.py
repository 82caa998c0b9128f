"""Build and inspect the role image, the container image every role launch runs.

The image holds ``roles.runner`` in a virtualenv at ``/opt/roundtable/venv``: the ``roles`` package
(as the ``roundtable-role`` distribution) and what it and its MCP client import, nothing of the
supervisor, the store, the capabilities, the Docker SDK or uvicorn. It runs as the fixed non-root user
``10001:10001`` and needs no writes to its root filesystem (``deploy/Dockerfile``). It is tagged
``roundtable-role:<version>`` and carries these labels:

* ``org.opencontainers.image.version`` / ``org.opencontainers.image.revision``: what was built;
* ``roundtable.role-image=1``: marks it as ours;
* ``roundtable.source-hash``: a digest of every build input (``roles/``, ``deploy/role/``, the
  Dockerfile, the version and the base image; :mod:`supervisor.image._inputs`). A build whose inputs
  match the tagged image's hash is skipped.

Two paths, chosen by ``offline``:

* registry (``offline=False``): ``FROM python:3.11-slim``, pulled by the engine;
* offline (``offline=True``): ``deploy/build-base.sh`` bootstraps a minimal Debian with ``python3`` from
  the mirror of this machine's apt configuration, and the tarball is imported as
  ``roundtable-base:<suite>``; an existing base image is reused. This step needs root and debootstrap
  and lives in :mod:`supervisor.image._base`.

Either way the wheels (roundtable-role, its dependencies, mcp's and pip) are built on the host with
``pip wheel`` and installed in the image with ``--no-index``; nothing in the image build reaches the
network.

Everything here blocks: callers on the event loop run it in a worker thread. Failures raise
:class:`ImageBuildError`, or :class:`DockerUnavailableError` when the engine cannot be reached.
"""

from __future__ import annotations

import collections
import gc
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import docker
import docker.errors

from supervisor.image._base import BASE_REPOSITORY, ensure_base_image
from supervisor.image._common import (
    ERROR_TAIL,
    DockerUnavailableError,
    ImageBuildError,
    Progress,
    docker_step,
    get_image,
)
from supervisor.image._inputs import ROLE_PROJECT, build_wheels, snapshot_inputs, source_hash

__all__ = [
    "BASE_REPOSITORY",
    "REGISTRY_BASE",
    "ROLE_REPOSITORY",
    "DockerUnavailableError",
    "ImageBuildError",
    "ImageBuildResult",
    "ImageStatus",
    "build_role_image",
    "inspect_role_image",
    "role_image_tag",
    "source_hash",
]

ROLE_REPOSITORY = "roundtable-role"
REGISTRY_BASE = "python:3.11-slim"
LABEL_VERSION = "org.opencontainers.image.version"
LABEL_REVISION = "org.opencontainers.image.revision"
LABEL_SOURCE_HASH = "roundtable.source-hash"
_REQUIRED_FILES = (
    "deploy/Dockerfile",
    "deploy/build-base.sh",
    "deploy/role/pyproject.toml",
    "deploy/role/check.py",
    "roles/runner.py",
)
_DOCKER_TIMEOUT = 900.0


@dataclass(frozen=True)
class ImageBuildResult:
    """The outcome of :func:`build_role_image`; ``built`` is False when the image was up to date."""

    tag: str
    image_id: str
    built: bool
    seconds: float


@dataclass(frozen=True)
class ImageStatus:
    """What ``docker inspect`` says about a role image, for ``roundtable doctor``."""

    tag: str
    image_id: str
    created: datetime
    age_seconds: float
    size_bytes: int
    labels: Mapping[str, str]

    @property
    def version(self) -> str | None:
        """The roundtable version baked into the image."""
        return self.labels.get(LABEL_VERSION)

    @property
    def revision(self) -> str | None:
        """The git commit the image was built from (``unknown`` outside a git checkout)."""
        return self.labels.get(LABEL_REVISION)

    @property
    def source_hash(self) -> str | None:
        """The digest of the build inputs; compare with :func:`source_hash` to detect a stale image."""
        return self.labels.get(LABEL_SOURCE_HASH)


def role_image_tag() -> str:
    """The tag of the role image for the installed version: ``roundtable-role:<version>``."""
    return f"{ROLE_REPOSITORY}:{version('roundtable')}"


def build_role_image(
    *,
    offline: bool,
    progress: Progress,
    force: bool = False,
    rebuild_base: bool = False,
    repo_root: Path | None = None,
) -> ImageBuildResult:
    """Build ``roundtable-role:<version>`` from the source checkout, unless it is already up to date.

    ``offline`` builds from a local debootstrap base instead of ``python:3.11-slim``; ``force``
    rebuilds the role image even when its source hash matches; ``rebuild_base`` also re-bootstraps
    the offline base. ``progress`` receives one short line per phase (``base: ...``, ``wheels: ...``,
    ``image: step 3/9 ...``).
    """
    started = time.monotonic()
    root = _repo_root(repo_root)
    tag, release = role_image_tag(), version("roundtable")
    client = _client()
    try:
        if offline:
            base_tag, base_id = ensure_base_image(client, root, progress, rebuild=rebuild_base)
            base, base_key = base_tag, f"{base_tag}@{base_id}"
        else:
            base = base_key = REGISTRY_BASE
        with tempfile.TemporaryDirectory(prefix="roundtable-image-") as tmp:
            context = Path(tmp)
            # The hash of what is copied: the label says what the image was built from, even if the
            # checkout moves on while it builds.
            digest = snapshot_inputs(root, context, base_key, version=release)
            previous = get_image(client, tag)
            if previous is not None and previous.labels.get(LABEL_SOURCE_HASH) == digest and not force:
                progress(f"image: {tag} is up to date ({previous.id[7:19]})")
                return ImageBuildResult(tag, str(previous.id), False, time.monotonic() - started)
            build_wheels(context / ROLE_PROJECT, context / "wheels", progress)
            shutil.rmtree(context / ROLE_PROJECT)
            buildargs = {
                "BASE": base,
                "VERSION": release,
                "REVISION": _git_revision(root),
                "SOURCE_HASH": digest,
            }
            try:
                image_id = _docker_build(client, context, tag, buildargs, progress, offline=offline)
            finally:
                _prune_leftovers(client, progress)
        seconds = time.monotonic() - started
        progress(f"image: built {tag} ({image_id[7:19]}) in {seconds:.1f}s")
        return ImageBuildResult(tag, image_id, True, seconds)
    finally:
        client.close()


def inspect_role_image(tag: str | None = None) -> ImageStatus | None:
    """Describe the role image ``tag`` (default: :func:`role_image_tag`), or None when it is absent."""
    tag = tag or role_image_tag()
    client = _client()
    try:
        image = get_image(client, tag)
        if image is None:
            return None
        attrs: dict[str, Any] = image.attrs
        created = _parse_docker_time(str(attrs["Created"]))
        return ImageStatus(
            tag=tag,
            image_id=str(image.id),
            created=created,
            age_seconds=max(0.0, (datetime.now(UTC) - created).total_seconds()),
            size_bytes=int(attrs.get("Size") or 0),
            labels=dict(image.labels or {}),
        )
    finally:
        client.close()


# -- internals ---------------------------------------------------------------------------------------


def _client() -> Any:
    """A Docker client that has answered a ping, or :class:`DockerUnavailableError`."""
    client = None
    try:
        client = docker.from_env(timeout=_DOCKER_TIMEOUT)
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        reason = str(exc)
    else:
        return client
    if client is not None:
        client.close()
    # A failed constructor leaves its half-open socket to the garbage collector; collect it now,
    # quietly, rather than as a stray ResourceWarning at some later, unrelated moment.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise DockerUnavailableError(
        f"cannot reach the Docker engine ({reason}); is it running, and may this user use its socket?"
    )


def _repo_root(repo_root: Path | None) -> Path:
    root = (repo_root or Path(__file__).resolve().parents[2]).resolve()
    for needed in _REQUIRED_FILES:
        if not (root / needed).exists():
            raise ImageBuildError(
                f"{root} is not a Roundtable source checkout (no {needed}); the role image is built "
                "from the repository, pass repo_root"
            )
    return root


def _git_revision(root: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    rev = proc.stdout.strip()
    return rev if proc.returncode == 0 and rev else "unknown"


_STEP = re.compile(r"Step (\d+/\d+) : (.*)")


def _docker_build(
    client: Any, context: Path, tag: str, buildargs: dict[str, str], progress: Progress, *, offline: bool
) -> str:
    """Run the classic builder on ``context``, streaming its steps to ``progress``; return the image id."""
    tail: collections.deque[str] = collections.deque(maxlen=ERROR_TAIL)
    error: str | None = None
    with docker_step(f"docker build of {tag}"):
        stream = client.api.build(
            path=str(context),
            dockerfile="Dockerfile",
            tag=tag,
            buildargs=buildargs,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        for chunk in stream:
            if "error" in chunk:
                error = str(chunk["error"]).strip()
                continue
            for line in str(chunk.get("stream") or chunk.get("status") or "").splitlines():
                match = _STEP.fullmatch(line.strip())
                if match:
                    progress(f"image: step {match[1]} {match[2][:100]}")
                elif line.strip():
                    tail.append(line.rstrip())
    if error is not None:
        hint = (
            ""
            if offline
            else (f"; the registry path pulls {REGISTRY_BASE}: without a registry, build with --offline")
        )
        detail = "\n".join(tail)
        raise ImageBuildError(f"docker build of {tag} failed: {error}{hint}\n{detail}".rstrip())
    image = get_image(client, tag)
    if image is None:
        raise ImageBuildError(f"docker build reported success but {tag} does not exist")
    return str(image.id)


def _prune_leftovers(client: Any, progress: Progress) -> None:
    """Prune what builds leave untagged: build stages (they hold the wheels) and replaced role images.

    Images still used by a container stay. Pruning a replaced role image also frees the untagged parent
    layers, up to a replaced offline base.
    """
    for label in ("roundtable.build-stage=1", "roundtable.role-image=1"):
        try:
            client.images.prune(filters={"dangling": True, "label": label})
        except (docker.errors.DockerException, OSError) as exc:
            progress(f"image: could not prune old images labelled {label} ({exc})")


def _parse_docker_time(value: str) -> datetime:
    """Parse Docker's RFC 3339 timestamps, which carry nanoseconds Python does not accept."""
    match = re.fullmatch(r"(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", value)
    if match is None:
        raise ImageBuildError(f"unexpected timestamp from docker inspect: {value!r}")
    fraction = (match[2] or "0")[:6].ljust(6, "0")
    zone = "+00:00" if match[3] == "Z" else match[3]
    return datetime.fromisoformat(f"{match[1]}.{fraction}{zone}")
