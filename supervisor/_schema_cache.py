"""The role tools' JSON schemas, kept in the private runtime base from one command to the next.

A launch socket answers its role's ``tools/list`` with each tool's input and output schema, which
pydantic generates from the tools' models: 40 to 70 ms of CPU for the nine tools the roles may be
granted, which every cold ``oracle launch`` spent (on one core, beside the imports, while its
container waited) for the same answer as the last one. :func:`prepare_role_schemas` reads them
from ``<runtime base>/schemas/<key>.json`` instead, and writes that file when it has to build them.

The key is what the schemas are a function of, the way Python keys its own bytecode cache: the
Python and pydantic versions and the path, size and modification time of every source file of
:mod:`store` and :mod:`capabilities` (where the tools' models and every model they nest live),
and the tools asked for (a launch prepares its own role's tools, and each tool set has its file);
any edit there names another file. The file is read only as a plain file of ours that nobody
else may write (:func:`~supervisor.launch._private_files.read_private`), and its content is
adopted only when it holds exactly the tools asked for, in the shape built ones have
(:meth:`~capabilities.mcp.ToolRegistry.adopt_schemas`); else the schemas are built and the file
written afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from supervisor.launch import keep_newest, read_private, write_private

if TYPE_CHECKING:
    from capabilities.mcp import ToolRegistry

__all__ = ["prepare_role_schemas", "schema_key"]

_MAX_BYTES = 1024 * 1024
_KEPT = 8
_CACHE_FORMAT = "1"


def schema_key(packages: Iterable[Path], versions: Iterable[str]) -> str:
    """The hex key of the schemas built from the sources under ``packages`` with ``versions``."""
    digest = hashlib.sha256(_CACHE_FORMAT.encode())
    for version in versions:
        digest.update(b"\0v" + version.encode())
    for package in packages:
        for root, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path)
                    digest.update(f"\0{path}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def _default_key(tools: list[str]) -> str:
    """The key of the schemas of ``tools`` built by this code: each tool set its own file, so a
    supervisor launching one role's tools and one launching another's do not rewrite each other's."""
    import pydantic

    import capabilities
    import store

    packages = [Path(module.__file__).parent for module in (store, capabilities) if module.__file__]
    return schema_key(packages, (sys.version, pydantic.VERSION, "tools:" + ",".join(tools)))


def prepare_role_schemas(registry: ToolRegistry, names: Iterable[str], base: Path | None) -> bool:
    """Make the schemas of the tools ``names`` ready in ``registry``: from the file of the runtime
    ``base`` whose key is this code's when there is a sound one (True), else built, and written
    there for the next process (False). With no ``base``, built."""
    wanted = sorted(set(names))
    if base is None:
        registry.prepare_schemas(wanted)
        return False
    directory = base / "schemas"
    path = directory / f"{_default_key(wanted)}.json"
    data = read_private(path, _MAX_BYTES)
    if data is not None:
        with contextlib.suppress(ValueError):
            if registry.adopt_schemas(json.loads(data), wanted):
                return True
    exported = registry.export_schemas(wanted)
    with contextlib.suppress(OSError):  # a cache it could not write costs the next launch its build
        if base.is_dir():  # the private base exists once a supervisor ran (RuntimeRoot.ensure)
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
            write_private(path, json.dumps(exported, sort_keys=True, separators=(",", ":")))
            keep_newest(directory, _KEPT)
    return False
