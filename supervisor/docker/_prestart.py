"""A cold launch's container, started while the command is still loading what runs the launch.

``roundtable oracle launch P --wait`` with no ``roundtable serve`` on the project runs the launch in
its own process, with a one-shot warm pool of one container (:meth:`supervisor.Supervisor.warm`).
Left to itself, that pool creates its container only once the command has imported the store, the
configuration and the supervisor and has reaped: about a third of a second of start-up the engine
then adds its own create and start to. A *prestart* overlaps the two.

* Each one-shot pool that creates its container records how, in a **recipe**: the create arguments
  (:func:`~supervisor.launch.container_kwargs`, every hardening measure), the slot, owner and
  runtime directory and supervisor id they name, and the SHA-256 of the project's ``config.toml``.
  The recipe lives in the private runtime base (0700, ours, checked), never in the project, twice:
  as the project's, and as the configuration's (any project with the same ``config.toml``, say a
  new one whose first launch this is, may start from it).
* The next such command, on its quick path (:mod:`supervisor.cli._quick`, before the parser, the
  store or the launch machinery are imported), reads its project's recipe, else its
  configuration's, when the digest matches, takes the supervisor's owner lock, and in a thread
  prepares a pool slot (its runtime directory and FIFOs, :mod:`supervisor.docker._slot`) and
  creates and starts the container with the recipe's arguments, the new slot, owner, directory and
  supervisor id substituted.
* When the command's pool fills its slot, it **adopts** the container only if the arguments it
  computes from the real configuration are exactly those that were sent
  (:meth:`Prestart.matches`); otherwise it removes the container and creates its own. The recipe is
  a guess at what the pool will want; the pool's own arguments decide.

A prestarted container is a pooled container from the start: labelled with the pool's owner and a
slot id, no grant, no token, no socket, nothing of any proposal until a launch claims it; the reaper
treats it as any pooled container (kept while its owner's lock is held, removed once it is not).
There is no prestart on a PostgreSQL store (a lease in the database owns launches there, not a
lock), without a recipe, or with one that is not a plain file of ours. A command that ends without
adopting its prestart removes it (:meth:`Prestart.discard`); one that dies leaves it to the reaper.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from supervisor.docker._engine_api import EngineApiBackend, engine_address, unix_socket_path
from supervisor.docker._prestart_check import canonical, hardening_problem
from supervisor.docker._slot import open_slot
from supervisor.launch import (
    LaunchRuntimeDir,
    OwnerLock,
    RuntimeRoot,
    keep_newest,
    owner_directory,
    read_private,
    supervisor_id_for,
    write_private,
)

__all__ = [
    "Prestart",
    "Recipe",
    "begin_prestart",
    "config_digest",
    "recipe_path",
    "shared_recipe_path",
    "write_recipe",
]

_RECIPE_VERSION = 1
_MAX_RECIPE_BYTES = 64 * 1024
_MAX_RECIPES = 64
_SLOT = re.compile(r"W-[0-9a-f]{12}")
_OWNER = re.compile(r"[0-9]+-[0-9a-f]{8}")
_SUPERVISOR = re.compile(r"rt[0-9a-f]{14}")
_CONFIG_FILE = Path(".roundtable") / "config.toml"
_DISCARD_WAIT_SECONDS = 60.0


def recipe_path(runtime: RuntimeRoot) -> Path:
    """Where the recipe of the supervisor whose runtime directory is ``runtime`` lives."""
    return runtime.base / "prestart" / f"{runtime.path.name}.json"


def shared_recipe_path(runtime: RuntimeRoot, config_sha256: str) -> Path:
    """Where the recipe any project of this configuration may start from lives (a new project's
    first cold launch has none of its own; ``init`` writes the same configuration every time)."""
    return runtime.base / "prestart" / f"config-{config_sha256[:32]}.json"


def config_digest(project_root: Path) -> str:
    """The SHA-256 of the project's ``config.toml`` ("" when it cannot be read)."""
    try:
        return hashlib.sha256((project_root / _CONFIG_FILE).read_bytes()).hexdigest()
    except OSError:
        return ""


@dataclass(frozen=True)
class Recipe:
    """How a one-shot pool created its container: the arguments and the values in them that belong
    to that one slot (its id, its pool owner, its runtime directory) and to its project (the
    supervisor id)."""

    config_sha256: str
    kwargs: Mapping[str, Any]
    slot_id: str
    owner: str
    rundir: str
    supervisor_id: str

    def for_slot(self, slot_id: str, owner: str, rundir: str, supervisor_id: str) -> dict[str, Any]:
        """The arguments for another slot: every occurrence of the recorded slot's values replaced.

        The directory is replaced first, for it holds the slot id's random part and the supervisor
        id's first characters; the values are random names or digests, so nothing else in the
        arguments can contain them."""
        replacements = (
            (self.rundir, rundir),
            (self.slot_id, slot_id),
            (self.owner, owner),
            (self.supervisor_id, supervisor_id),
        )
        kwargs = _substituted(self.kwargs, replacements)
        assert isinstance(kwargs, dict)
        return kwargs

    def to_json(self) -> str:
        """The recipe file's text."""
        return json.dumps(
            {"version": _RECIPE_VERSION, "config_sha256": self.config_sha256, "kwargs": self.kwargs,
             "slot_id": self.slot_id, "owner": self.owner, "rundir": self.rundir,
             "supervisor_id": self.supervisor_id},
            sort_keys=True,
        )  # fmt: skip

    @classmethod
    def parse(cls, text: bytes) -> Recipe | None:
        """The recipe in ``text``, or None when it is not one this version wrote."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("version") != _RECIPE_VERSION:
            return None
        values = [data.get(key) for key in ("config_sha256", "slot_id", "owner", "rundir", "supervisor_id")]
        if not all(isinstance(value, str) and value for value in values) or not isinstance(
            data.get("kwargs"), dict
        ):
            return None
        digest, slot_id, owner, rundir, supervisor_id = (str(value) for value in values)
        if not (
            _SLOT.fullmatch(slot_id) and _OWNER.fullmatch(owner) and _SUPERVISOR.fullmatch(supervisor_id)
        ):
            return None  # a value to substitute must be a random name, never a word like "ALL"
        return cls(digest, data["kwargs"], slot_id, owner, rundir, supervisor_id)


def _substituted(value: Any, replacements: tuple[tuple[str, str], ...]) -> Any:
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {_substituted(k, replacements): _substituted(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_substituted(item, replacements) for item in value]
    return value


def write_recipe(runtime: RuntimeRoot, recipe: Recipe) -> None:
    """Record ``recipe`` for the next cold launch of this project and of any project with this
    configuration (atomically: a reader sees the old or the new one)."""
    runtime.ensure()  # the private base the recipes' directory lives in
    for path in (recipe_path(runtime), shared_recipe_path(runtime, recipe.config_sha256)):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path.parent, 0o700)
        write_private(path, recipe.to_json())
    keep_newest(recipe_path(runtime).parent, _MAX_RECIPES)


def _read_recipe(path: Path) -> Recipe | None:
    """The recipe at ``path`` if it is a plain file of ours that nobody else may write; else None."""
    text = read_private(path, _MAX_RECIPE_BYTES)
    return None if text is None else Recipe.parse(text)


@dataclass(eq=False)
class Prestart:
    """One prestarted container: its slot, the owner lock it is labelled with, its runtime
    directory and held FIFOs, the arguments it was created with, and the thread creating it."""

    runtime: RuntimeRoot
    lock: OwnerLock
    slot_id: str
    recipe: Recipe
    supervisor_id: str
    recipe_file: Path | None = None
    rundir: LaunchRuntimeDir | None = None
    fds: list[int] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    container_id: str | None = None
    error: str | None = None
    adopted: bool = False
    """A pool took the container, its directory and its FIFOs: from then on they are the pool's."""
    discarded: bool = False
    _backend: EngineApiBackend | None = field(default=None, repr=False)
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _run(self, socket_path: str) -> None:
        try:
            self.rundir = open_slot(self.runtime, self.slot_id, self.fds)
            kwargs = self.recipe.for_slot(
                self.slot_id, self.lock.name, str(self.rundir.path), self.supervisor_id
            )
            problem = hardening_problem(kwargs, rundir=str(self.rundir.path))
            if problem is not None:
                raise ValueError(f"the recipe is not a launch's: {problem}")
            self.kwargs = kwargs
            with self._guard:
                if self.discarded:  # given up on while it prepared: create nothing
                    return
                self._backend = EngineApiBackend(socket_path)
            self.container_id = self._backend.create(self.kwargs)
            self._backend.start(self.container_id)
        except Exception as exc:  # a guess that did not work: the pool creates its own container
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def started(self, timeout: float | None = None) -> str | None:
        """Wait for the thread; the started container's id, or None if it failed (see ``error``)."""
        self._done.wait(timeout)
        usable = self._done.is_set() and self.error is None and not self.discarded
        return self.container_id if usable else None

    def fits(self, runtime: RuntimeRoot, backend: str) -> bool:
        """Whether a supervisor with ``runtime`` on a ``backend`` store may take this prestart over:
        the same runtime directory (so the same owner-lock directory) and an SQLite store."""
        return runtime.path == self.runtime.path and backend == "sqlite"

    def matches(self, kwargs: Mapping[str, Any], *, runtime: RuntimeRoot, owner: str) -> bool:
        """Whether a pool of ``runtime`` and ``owner`` would create this slot's container with exactly
        the arguments it was created with (``kwargs``: what the pool computes for this slot)."""
        try:
            same = canonical(kwargs) == canonical(self.kwargs)
        except (TypeError, ValueError):
            return False
        return runtime.path == self.runtime.path and owner == self.lock.name and same

    def adopt(self) -> list[int]:
        """Hand the container, its directory and its FIFOs (returned) to the pool that took it
        (:meth:`discard` then leaves them alone), close the engine connection, and mark the recipe
        used, so the newest-kept rule keeps it."""
        with self._guard:
            self.adopted = True
            fds, self.fds = self.fds, []
        if self._backend is not None:
            self._backend.close()
        if self.recipe_file is not None:
            with contextlib.suppress(OSError):
                os.utime(self.recipe_file)
        return fds

    def discard(self, *, release_lock: bool) -> None:
        """Remove the container (once its thread is done), the directory and the FIFOs, unless a pool
        adopted them or they are gone already; release the owner lock too unless a supervisor took it
        over. Blocking; never raises (what is left, the reaper removes)."""
        with self._guard:
            settled, self.discarded = self.adopted or self.discarded, True
        if not settled:
            self._remove()
        if release_lock:
            with contextlib.suppress(OSError):
                self.lock.release()

    def _remove(self) -> None:
        self._done.wait(_DISCARD_WAIT_SECONDS)
        name = self.container_id or self.kwargs.get("name")
        with contextlib.suppress(Exception):
            if self._backend is not None and name:
                self._backend.remove(str(name))
        self.close()
        if self.rundir is not None:
            with contextlib.suppress(OSError):
                self.rundir.remove()

    def close(self) -> None:
        """Close the FIFOs and the engine connection (an adopting pool holds its own)."""
        while self.fds:
            with contextlib.suppress(OSError):
                os.close(self.fds.pop())
        if self._backend is not None:
            self._backend.close()


def begin_prestart(project_root: Path) -> Prestart | None:
    """Start the prestart of ``project_root``'s next cold launch (module docstring); None when there
    is nothing to start (no recipe of this configuration, a PostgreSQL store, a remote engine)."""
    if os.environ.get("ROUNDTABLE_STORE_URL"):
        return None
    socket_path = unix_socket_path(engine_address())
    if socket_path is None:
        return None
    try:
        supervisor_id = supervisor_id_for(project_root)
        runtime = RuntimeRoot(supervisor_id)
        runtime.ensure()  # refuses a base that is not ours and private: then no recipe is trusted
    except Exception:  # the launch's own start reports what is wrong with the runtime directory
        return None
    digest = config_digest(project_root)
    recipe_file = recipe_path(runtime)
    recipe = _read_recipe(recipe_file)
    if (recipe is None or recipe.config_sha256 != digest) and digest:
        recipe_file = shared_recipe_path(runtime, digest)
        recipe = _read_recipe(recipe_file)
    if recipe is None or recipe.config_sha256 != digest:
        return None
    lock = OwnerLock(owner_directory(runtime.path, supervisor_id))
    try:
        lock.acquire()
    except OSError:
        return None
    try:
        prestart = Prestart(runtime, lock, f"W-{secrets.token_hex(6)}", recipe, supervisor_id, recipe_file)
        threading.Thread(target=prestart._run, args=(socket_path,), name="prestart", daemon=True).start()
    except Exception:  # the launch runs without one
        lock.release()
        return None
    return prestart
