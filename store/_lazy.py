"""Package roots that export their names lazily (PEP 562): a name's module is imported on first use.

A package root that imports all its modules makes every caller pay for all of them: ``import
store.errors`` would load pydantic and SQLite, a cold launch's first Docker request would wait for the
launcher, the pool and the reaper. :func:`lazy_exports` gives a root the module ``__getattr__`` that
imports the module of a name when the name is first asked for and keeps it, so ``from package import
Name`` and ``package.Name`` work as before, and importing one private module of the package (say
``supervisor.docker._engine_api``) imports that module alone.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package`` for ``exports`` (module name -> the names it exports)."""
    module_of = {name: module for module, names in exports.items() for name in names}
    namespace = vars(sys.modules[package])

    def module_getattr(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return module_getattr
