"""structlog without rich: the logs render tracebacks as plain text, and the CLI starts faster.

``import structlog`` imports its ``dev`` and ``tracebacks`` modules, and both import ``rich`` when it
is installed (only a development tool, schemathesis, brings it here): about 40 ms of every command's
start-up, for pretty tracebacks Roundtable never prints (a caller gets a structured error, a log line
a one-line exception). :func:`install` adds a finder that lets ``structlog`` load as if ``rich`` were
absent, which structlog supports (its plain renderers), and then puts ``rich`` back for anyone else:
schemathesis, say, imports it normally afterwards.

Installed by :mod:`store` (every Roundtable package imports it first); it changes nothing when
``rich`` or ``structlog`` is already loaded.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import importlib.abc

__all__ = ["install"]

_TARGET = "structlog"
_HIDDEN = "rich"


class _Loader:
    """Runs structlog's own loader with ``rich`` hidden from the imports it makes (a loader by its
    methods: subclassing ``importlib.abc`` would import ``importlib.resources`` at every start)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> object:  # get_source (tracebacks), is_package, get_data...
        return getattr(self.inner, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        if _HIDDEN in sys.modules:  # loaded meanwhile: nothing to save
            self.inner.exec_module(module)
            return
        sys.modules[_HIDDEN] = None  # type: ignore[assignment]  # ``import rich`` raises ImportError
        try:
            self.inner.exec_module(module)
        finally:
            if sys.modules.get(_HIDDEN, ...) is None:
                del sys.modules[_HIDDEN]


class _Finder:
    """Finds ``structlog`` as the other finders do and wraps its loader (once, then steps aside)."""

    used = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET or self.used:
            return None
        self.used = True
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or _HIDDEN in sys.modules:
            return spec
        spec.loader = cast("importlib.abc.Loader", _Loader(spec.loader))
        return spec


def install() -> None:
    """Load structlog without rich when it is first imported (module docstring)."""
    if _TARGET in sys.modules or _HIDDEN in sys.modules:
        return
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
