"""The public surface, tested both ways (as httpx's ``test_exported_members.py`` and anyio's
``test_all_attributes.py`` do), for every package of ours, found by walking the tree.

- Every name in a package's ``__all__`` exists (lazy exports through a module ``__getattr__``
  included), is public, and is defined inside that package.
- Every public name a package's ``__init__`` defines, or imports from its own modules, is in its
  ``__all__``: a name exported by import alone fails.
- No module outside a package imports that package's private (underscore) modules or names.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_layout import REPO, ImportRef, all_imports, production_packages, resolve_import

PACKAGES = production_packages()


def _init_path(package: str) -> Path:
    return REPO.joinpath(*package.split("."), "__init__.py")


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking inside ``if TYPE_CHECKING:`` and ``try`` blocks."""
    for node in body:
        if isinstance(node, ast.If | ast.Try):
            yield from _module_statements(node.body)
            yield from _module_statements(node.orelse)
        else:
            yield node


def _own_bindings(package: str) -> set[str]:
    """The names the package's ``__init__`` defines, or imports from the package's own modules."""
    path = _init_path(package)
    bound: set[str] = set()
    for node in _module_statements(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
        if isinstance(node, ast.ImportFrom):
            if _within(resolve_import(package, True, node), package):
                bound.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign):
            bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound.add(node.target.id)
    return {name for name in bound if not name.startswith("_")}


def _exports(module: ModuleType) -> list[str]:
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list | tuple), f"{module.__name__} has no __all__"
    assert all(isinstance(name, str) for name in exported)
    return list(exported)


def _defined_in(module: str, name: str, seen: frozenset[str] = frozenset()) -> str | None:
    """The module of ours that assigns ``name`` as ``module`` sees it, following imports through our code."""
    path = _init_path(module)
    if not path.exists():
        path = REPO.joinpath(*module.split(".")).with_suffix(".py")
    if module in seen or not path.exists():
        return None
    for node in _module_statements(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = resolve_import(module, path.name == "__init__.py", node)
                    return _defined_in(source, alias.name, seen | {module})
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                return module
    return None


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_exists_is_public_and_is_ours(package: str) -> None:
    module = importlib.import_module(package)
    exported = _exports(module)
    assert len(exported) == len(set(exported)), f"{package}.__all__ lists a name twice"
    for name in exported:
        assert not name.startswith("_"), f"{package}.__all__ exports {name!r}, which is not public"
        assert hasattr(module, name), f"{package}.__all__ names {name!r}, which does not exist"
        member = inspect.unwrap(getattr(module, name))  # a cached function: the function it wraps
        if isinstance(member, ModuleType):
            owner = member.__name__
        elif inspect.isclass(member) or inspect.isfunction(member):
            owner = member.__module__
        else:  # a constant: where is it assigned?
            owner = _defined_in(package, name) or "<not found in our source>"
        assert _within(owner, package), f"{package}.{name} is defined in {owner}, outside {package}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_exported(package: str) -> None:
    module = importlib.import_module(package)
    exported = set(_exports(module))
    public = set(_own_bindings(package))
    for name, member in vars(module).items():
        if name.startswith("_") or isinstance(member, ModuleType):
            continue
        if (inspect.isclass(member) or inspect.isfunction(member)) and _within(member.__module__, package):
            public.add(name)
    public -= {"TYPE_CHECKING"}
    missing = sorted(public - exported)
    assert not missing, (
        f"{package} makes {missing} public without exporting them: add them to __all__,"
        " or give them a leading underscore"
    )


def _private_owner(ref: ImportRef) -> str | None:
    """The package whose private module or name ``ref`` reaches into, if any."""
    parts = ref.target.split(".")
    for index, part in enumerate(parts):
        if _is_private(part):
            return ".".join(parts[:index])
    return None


def test_no_module_imports_another_package_s_private_modules() -> None:
    wrong = [
        f"  {ref.where}: {ref.target} is private to {owner}; import it from {owner}"
        for ref in all_imports()
        if (owner := _private_owner(ref)) is not None and not _within(ref.importer, owner)
    ]
    assert not wrong, "private modules imported from outside their package:\n" + "\n".join(wrong)


def test_the_checks_would_notice() -> None:
    """The helpers themselves: a private import from outside, a constant from elsewhere, a lazy export."""
    outsider = ImportRef(REPO / "x.py", 1, "capabilities.serving._web", "capabilities.mcp._server.X")
    assert _private_owner(outsider) == "capabilities.mcp"
    assert not _within(outsider.importer, "capabilities.mcp")
    assert _private_owner(ImportRef(REPO / "x.py", 1, "store.work", "store.work._apply.W")) == "store.work"
    assert _defined_in("capabilities", "MEMORY_ORACLE_TOOLS") == "capabilities.policy"
    bindings = _own_bindings("capabilities.mcp")
    assert "RoundtableMCPServer" in bindings  # imported under TYPE_CHECKING, exported lazily
    assert "TYPE_CHECKING" not in bindings and "Any" not in bindings  # from the standard library
