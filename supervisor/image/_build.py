"""Build and inspect the role image, the container image every role launch runs.

The image holds ``roles.runner`` in a virtualenv at ``/opt/roundtable/venv``, runs as the fixed
non-root user ``10001:10001`` and needs no writes to its root filesystem (``deploy/Dockerfile``). It is
tagged ``roundtable-role:<version>`` and carries these labels:

* ``org.opencontainers.image.version`` / ``org.opencontainers.image.revision``: what was built;
* ``roundtable.role-image=1``: marks it as ours;
* ``roundtable.source-hash``: a digest of every build input (the four packages, ``pyproject.toml``,
  the Dockerfile and the base image). A build whose inputs match the tagged image's hash is skipped.

Two paths, chosen by ``offline``:

* registry (``offline=False``): ``FROM python:3.11-slim``, pulled by the engine;
* offline (``offline=True``): ``deploy/build-base.sh`` bootstraps a minimal Debian with ``python3`` from
  the mirror of this machine's apt configuration, and the tarball is imported as
  ``roundtable-base:<suite>``; an existing base image is reused. This step needs root and debootstrap
  and lives in :mod:`supervisor.image._base`.

Either way the wheels (roundtable, its dependencies and pip) are built on the host with ``pip wheel``
and installed in the image with ``--no-index``; nothing in the image build reaches the network.

Everything here blocks: callers on the event loop run it in a worker thread. Failures raise
:class:`ImageBuildError`, or :class:`DockerUnavailableError` when the engine cannot be reached.
"""

from __future__ import annotations

import collections
import gc
import hashlib
import re
import shutil
import subprocess
import sys
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
    run_streaming,
)

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
_SOURCE_DIRS = ("supervisor", "roles", "capabilities", "store")
_SOURCE_FILES = ("pyproject.toml", "deploy/Dockerfile")
_PACKAGING_FILES = ("README.md", "LICENSE", "MANIFEST.in", "setup.cfg", "setup.py")
_SKIPPED_PARTS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_COPY_IGNORE = shutil.ignore_patterns(*_SKIPPED_PARTS, "*.pyc", "*.pyo", "*.egg-info")
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


def source_hash(repo_root: Path, base: str) -> str:
    """A SHA-256 over every build input under ``repo_root`` and the ``base`` image reference.

    Inputs are the files of the four packages (caches and bytecode excluded), ``pyproject.toml``,
    ``deploy/Dockerfile`` and the packaging files (README, LICENSE, ...), each hashed with its relative
    path (a missing file hashes as missing), in sorted order.
    """
    files: list[Path] = [repo_root / name for name in (*_SOURCE_FILES, *_PACKAGING_FILES)]
    for name in _SOURCE_DIRS:
        files.extend(
            path
            for path in (repo_root / name).rglob("*")
            if path.is_file()
            and path.suffix not in {".pyc", ".pyo"}
            and not _SKIPPED_PARTS.intersection(path.relative_to(repo_root).parts)
            and not any(part.endswith(".egg-info") for part in path.parts)
        )
    digest = hashlib.sha256(f"base\0{base}\0".encode())
    for path in sorted(files, key=lambda p: p.relative_to(repo_root).as_posix()):
        rel = path.relative_to(repo_root).as_posix()
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            content = b"\0missing"
        digest.update(f"{rel}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


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
    tag = role_image_tag()
    client = _client()
    try:
        if offline:
            base_tag, base_id = ensure_base_image(client, root, progress, rebuild=rebuild_base)
            base, base_key = base_tag, f"{base_tag}@{base_id}"
        else:
            base = base_key = REGISTRY_BASE
        digest = source_hash(root, base_key)
        previous = get_image(client, tag)
        if previous is not None and previous.labels.get(LABEL_SOURCE_HASH) == digest and not force:
            progress(f"image: {tag} is up to date ({previous.id[7:19]})")
            return ImageBuildResult(tag, str(previous.id), False, time.monotonic() - started)
        with tempfile.TemporaryDirectory(prefix="roundtable-image-") as tmp:
            context = Path(tmp)
            source = _snapshot_sources(root, context / "source")
            # Label the image with the hash of what it is built from, even if the checkout moves on.
            digest = source_hash(source, base_key)
            shutil.copy2(source / "deploy" / "Dockerfile", context / "Dockerfile")
            _build_wheels(source, context / "wheels", progress)
            shutil.rmtree(source)
            buildargs = {
                "BASE": base,
                "VERSION": version("roundtable"),
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
    for needed in ("pyproject.toml", "deploy/Dockerfile", "deploy/build-base.sh"):
        if not (root / needed).is_file():
            raise ImageBuildError(
                f"{root} is not a Roundtable source checkout (no {needed}); the role image is built "
                "from the repository, pass repo_root"
            )
    return root


def _snapshot_sources(root: Path, source: Path) -> Path:
    """Copy the build inputs (the hashed files, caches excluded) to ``source`` and return it.

    Building from a copy keeps ``build/`` and ``*.egg-info`` out of the checkout, stale modules out of
    the wheel, and the image consistent with its label while the checkout is being edited.
    """
    source.mkdir()
    for name in (*_SOURCE_FILES, *_PACKAGING_FILES):
        if (root / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, source / name)
    for name in _SOURCE_DIRS:
        if (root / name).is_dir():
            shutil.copytree(root / name, source / name, ignore=_COPY_IGNORE)
    return source


def _build_wheels(source: Path, wheels: Path, progress: Progress) -> None:
    """Build roundtable from ``source``, its dependencies and pip into the wheelhouse ``wheels``."""
    progress(f"wheels: building roundtable and its dependencies with {sys.executable} -m pip")
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"]
    run_streaming(
        [*argv, "--wheel-dir", str(wheels), str(source), "pip"],
        "building wheels (pip wheel)",
        progress,
        prefix="wheels:",
    )
    progress(f"wheels: {sum(1 for _ in wheels.glob('*.whl'))} wheels ready")


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


_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")


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
                match = _STEP.match(line.strip())
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
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", value)
    if match is None:
        raise ImageBuildError(f"unexpected timestamp from docker inspect: {value!r}")
    fraction = (match[2] or "0")[:6].ljust(6, "0")
    zone = "+00:00" if match[3] == "Z" else match[3]
    return datetime.fromisoformat(f"{match[1]}.{fraction}{zone}")
