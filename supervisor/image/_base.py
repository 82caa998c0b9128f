"""The offline base image: a minimal Debian with ``python3``, built without any container registry.

``roundtable image build --offline`` builds the role image ``FROM roundtable-base:<suite>`` instead of
``python:3.11-slim``. :func:`ensure_base_image` makes sure that base exists:

1. ``deploy/build-base.sh --print-source`` reads this machine's apt configuration and names the
   mirror and suite of its main Debian archive; the base is tagged ``roundtable-base:<suite>``.
2. An existing base image of that tag is reused, unless a rebuild is asked for.
3. Otherwise ``deploy/build-base.sh`` bootstraps the suite from that mirror with debootstrap into a
   tarball (this needs root), and the tarball is imported with ``PATH``, ``LANG`` and ``CMD`` set and
   the suite and mirror recorded as labels. A base image it replaces is removed, unless a container
   still uses it.

Everything here blocks. Failures raise :class:`~supervisor.image_common.ImageBuildError`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

import docker.errors

from supervisor.image._common import ImageBuildError, Progress, docker_step, get_image, run_streaming

__all__ = ["BASE_REPOSITORY", "ensure_base_image"]

BASE_REPOSITORY = "roundtable-base"


def ensure_base_image(client: Any, root: Path, progress: Progress, *, rebuild: bool) -> tuple[str, str]:
    """Make sure ``roundtable-base:<suite>`` exists; return its tag and image id.

    ``client`` is a docker SDK client, ``root`` the source checkout holding ``deploy/build-base.sh``.
    ``rebuild`` bootstraps and imports the base again even when it exists. ``progress`` receives
    ``base: ...`` lines.
    """
    script = root / "deploy" / "build-base.sh"
    mirror, suite = _apt_main_source(script)
    base_tag = f"{BASE_REPOSITORY}:{suite}"
    existing = get_image(client, base_tag)
    if existing is not None and not rebuild:
        progress(f"base: {base_tag} present ({existing.id[7:19]})")
        return base_tag, str(existing.id)
    if os.geteuid() != 0:
        raise ImageBuildError(
            f"building the offline base {base_tag} runs debootstrap, which needs root: run "
            "`sudo deploy/build-base.sh base.tar` and `docker import base.tar " + base_tag + "`, "
            "or build once as root"
        )
    if shutil.which("debootstrap", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") is None:
        raise ImageBuildError("debootstrap is not installed: run `make host-deps` (deploy/host-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="roundtable-base-") as tmp:
        tarball = Path(tmp) / f"base-{suite}.tar"
        run_streaming(
            ["bash", str(script), str(tarball), suite, mirror],
            "bootstrapping the offline base (deploy/build-base.sh)",
            progress,
            prefix="base:",
        )
        progress(f"base: importing as {base_tag}")
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            'CMD ["python3"]',
            f"LABEL roundtable.base-suite={suite} roundtable.base-mirror={mirror}",
        ]
        with docker_step(f"importing {base_tag}"):
            client.api.import_image_from_file(
                str(tarball), repository=BASE_REPOSITORY, tag=suite, changes=changes
            )
    image = get_image(client, base_tag)
    if image is None:
        raise ImageBuildError(f"docker import reported success but {base_tag} does not exist")
    if existing is not None and existing.id != image.id:
        _remove_quietly(client, str(existing.id))
    return base_tag, str(image.id)


def _apt_main_source(script: Path) -> tuple[str, str]:
    """The (mirror, suite) of the machine's main Debian archive, as ``build-base.sh`` reads it."""
    proc = subprocess.run(
        ["bash", str(script), "--print-source"], capture_output=True, text=True, check=False
    )
    fields = proc.stdout.split()
    if proc.returncode != 0 or len(fields) != 2:
        raise ImageBuildError(
            f"cannot find the Debian mirror in the apt configuration: {proc.stderr.strip()}"
        )
    return fields[0], fields[1]


def _remove_quietly(client: Any, image_id: str) -> None:
    """Remove an image we replaced; one still used by a container stays (docker refuses)."""
    with suppress(docker.errors.DockerException, OSError):
        client.images.remove(image_id)
