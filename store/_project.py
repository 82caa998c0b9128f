"""Where a project's ``.roundtable`` directory is, and creating it.

The project root is ``--root DIR`` when given, otherwise the nearest ancestor of the working
directory that contains ``.roundtable/`` (like git), otherwise, for ``init`` only, the working
directory itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from store.config import DEFAULT_CONFIG_TOML, ProjectConfig, load_config, package_version
from store.errors import InvalidArgument, NotInitialized

__all__ = ["STATE_DIR_NAME", "ProjectPaths", "find_project_root", "init_project"]

STATE_DIR_NAME = ".roundtable"


@dataclass(frozen=True)
class ProjectPaths:
    """The fixed layout under a project root."""

    root: Path

    @property
    def state_dir(self) -> Path:
        """``<root>/.roundtable``."""
        return self.root / STATE_DIR_NAME

    @property
    def config_file(self) -> Path:
        """``<root>/.roundtable/config.toml``."""
        return self.state_dir / "config.toml"

    @property
    def database(self) -> Path:
        """``<root>/.roundtable/roundtable.db``."""
        return self.state_dir / "roundtable.db"

    @property
    def patches_dir(self) -> Path:
        """``<root>/.roundtable/patches``."""
        return self.state_dir / "patches"

    def is_initialized(self) -> bool:
        """Whether ``.roundtable/`` exists here."""
        return self.state_dir.is_dir()

    def load_config(self) -> ProjectConfig:
        """The validated ``config.toml``."""
        return load_config(self.config_file)


def find_project_root(explicit: Path | str | None = None, *, start: Path | None = None) -> ProjectPaths:
    """Locate an initialised project, or raise :class:`NotInitialized`."""
    if explicit is not None:
        paths = ProjectPaths(Path(explicit).resolve())
        if not paths.is_initialized():
            raise NotInitialized(
                f"no {STATE_DIR_NAME}/ in {paths.root}; run `roundtable init --root {paths.root}` first"
            )
        return paths
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / STATE_DIR_NAME).is_dir():
            return ProjectPaths(candidate)
    raise NotInitialized(
        f"no {STATE_DIR_NAME}/ in {here} or any parent; run `roundtable init` in the project root"
    )


def init_project(root: Path | str | None = None) -> tuple[ProjectPaths, bool]:
    """Create ``.roundtable/{config.toml, roundtable.db, patches/}``; never destroys data.

    Returns the paths and whether anything was created. The database schema is created by
    :func:`store.db._connection.open_database`, which the caller runs next.
    """
    base = Path(root).resolve() if root is not None else Path.cwd().resolve()
    if base.exists() and not base.is_dir():
        raise InvalidArgument(f"{base} is not a directory")
    paths = ProjectPaths(base)
    created = False
    if paths.state_dir.is_symlink():
        raise InvalidArgument(f"{paths.state_dir} is a symlink; refusing to use it")
    if not paths.state_dir.exists():
        paths.state_dir.mkdir(parents=True, mode=0o755)
        created = True
    if not paths.patches_dir.exists():
        paths.patches_dir.mkdir(mode=0o755)
        created = True
    if not paths.config_file.exists():
        _write_new_file(paths.config_file, DEFAULT_CONFIG_TOML.replace("{version}", package_version()))
        created = True
    return paths, created


def _write_new_file(path: Path, text: str) -> None:
    """Create ``path`` atomically: a temporary name, fsync, rename, fsync the directory."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
