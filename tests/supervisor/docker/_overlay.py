"""The role image with this checkout's ``roles`` package laid over it, for tests of the warm pool.

A pooled container runs :mod:`roles._claim`; the shared role image may have been built from another
checkout. :func:`overlay_image` builds (once per content) ``roundtable-role:overlay-<hash>``: the
role image with ``roles/`` replaced by this tree's and compiled, nothing else changed (same user,
entry point, read-only-ready layout). ``python -m tests.supervisor.docker._overlay`` prints its tag.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
_SITE = "/opt/roundtable/venv/lib/python3.11/site-packages"
_DOCKERFILE = f"""\
ARG BASE
FROM ${{BASE}}
USER 0:0
RUN find {_SITE}/roles -name __pycache__ -prune -exec rm -rf {{}} +
COPY roles {_SITE}/roles
RUN /opt/roundtable/venv/bin/python -m compileall -q --invalidation-mode unchecked-hash {_SITE}/roles
USER 10001:10001
"""


def _sources() -> list[Path]:
    return sorted(p for p in (REPO_ROOT / "roles").rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def overlay_image(client: Any, base: str) -> str:
    """The tag of ``base`` with this checkout's ``roles`` (built when missing)."""
    digest = hashlib.sha256(str(client.images.get(base).id).encode())
    for path in _sources():
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    tag = f"roundtable-role:overlay-{digest.hexdigest()[:12]}"
    if client.images.list(name=tag):
        return tag
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = _DOCKERFILE.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for path in _sources():
            tar.add(path, arcname=str(path.relative_to(REPO_ROOT)), recursive=False)
    buffer.seek(0)
    client.images.build(
        fileobj=buffer, custom_context=True, tag=tag, buildargs={"BASE": base}, rm=True, forcerm=True
    )
    _prune(client, keep=tag)
    return tag


def _prune(client: Any, *, keep: str) -> None:
    """Untag earlier overlays (of older sources or bases) that no container uses."""
    import docker.errors

    for image in client.images.list(name="roundtable-role"):
        for old in image.tags:
            if old.startswith("roundtable-role:overlay-") and old != keep:
                try:
                    client.images.remove(old, noprune=False)
                except docker.errors.APIError:
                    continue  # in use by a container, or gone already


if __name__ == "__main__":
    import docker

    from supervisor.image._build import role_image_tag

    sdk = docker.from_env()
    try:
        print(overlay_image(sdk, role_image_tag()))
    finally:
        sdk.close()
