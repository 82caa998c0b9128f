"""What building images needs in both of its modules: errors, progress, image lookups, host tools.

The role image (:mod:`supervisor.image._build`) and its offline base (:mod:`supervisor.image._base`) are both
built step by step against the Docker engine, reporting as they go, so they share:

* the errors a build raises: :class:`ImageBuildError` (an :class:`~store.errors.InternalError`,
  code ``internal``) for a step that failed, and :class:`DockerUnavailableError` (the registry's
  :class:`~store.errors.DockerUnavailable` under its historical name) when the engine cannot be
  reached, before or during a build;
* :data:`Progress`, the callback that receives one short line per phase;
* :func:`docker_step`, which translates Docker SDK and transport errors, chained: a lost connection
  to :class:`DockerUnavailableError`, anything else to :class:`ImageBuildError`;
* :func:`get_image`, an image lookup that answers None for a missing image;
* :func:`run_streaming`, which runs a host tool (``pip wheel``, ``deploy/build-base.sh``), forwarding
  its progress lines and reporting the tail of its output when it fails.

Everything here blocks.
"""

from __future__ import annotations

import collections
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import docker.errors
import requests.exceptions

from store.errors import DockerUnavailable, InternalError

__all__ = [
    "ERROR_TAIL",
    "DockerUnavailableError",
    "ImageBuildError",
    "Progress",
    "docker_step",
    "get_image",
    "run_streaming",
]

ERROR_TAIL = 40
"""How many lines of a failed tool's or build's output an :class:`ImageBuildError` quotes."""

Progress = Callable[[str], None]


class ImageBuildError(InternalError):
    """The role image (or its offline base) could not be built; the message says which step failed."""


DockerUnavailableError = DockerUnavailable
"""The Docker engine cannot be reached (not running, or no permission on its socket)."""


@contextmanager
def docker_step(what: str) -> Iterator[None]:
    """Translate Docker SDK and transport errors raised during ``what`` (see the module docstring)."""
    try:
        yield
    except requests.exceptions.ConnectionError as exc:
        raise DockerUnavailableError(f"{what} failed: lost the Docker engine ({exc})") from exc
    except (docker.errors.DockerException, OSError) as exc:
        raise ImageBuildError(f"{what} failed: {exc}") from exc


def get_image(client: Any, ref: str) -> Any:
    """The image ``ref`` (a tag or an id) known to ``client``'s engine, or None when there is none."""
    with docker_step(f"looking up image {ref}"):
        try:
            return client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None


def run_streaming(argv: list[str], what: str, progress: Progress, *, prefix: str) -> None:
    """Run ``argv``; forward output lines starting with ``prefix`` and report the tail on failure.

    Raises :class:`ImageBuildError`, naming ``what``, when the program cannot be started or exits
    with a non-zero status.
    """
    tail: collections.deque[str] = collections.deque(maxlen=ERROR_TAIL)
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
    except OSError as exc:
        raise ImageBuildError(f"{what} failed: cannot run {argv[0]}: {exc}") from exc
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            line = raw.rstrip()
            if line.startswith(prefix):
                progress(line)
            elif line:
                tail.append(line)
    if proc.returncode != 0:
        detail = "\n".join(tail)
        raise ImageBuildError(f"{what} failed (exit status {proc.returncode}):\n{detail}")
