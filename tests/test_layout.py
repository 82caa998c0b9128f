"""The layout is the architecture, checked: which package may import which, that every package
imports on its own, and that modules stay small.

The scans read the production source with :mod:`ast` (tests and benchmarks are exempt), so a
violation is named by file and line. The helpers here (:func:`production_packages`,
:func:`production_modules`, :func:`imports_of`) are shared by ``tests/test_exported_members.py``
and ``tests/test_docs.py``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOP_PACKAGES = ("store", "capabilities", "supervisor", "roles")
"""Our import packages, in dependency order: each may import only those before it (and roles none)."""

MAX_MODULE_LINES = 400
MAX_STORE_TOP_MODULES = 12


@dataclass(frozen=True)
class ImportRef:
    """One module (or module attribute) that a production file imports, with where it does so."""

    path: Path
    line: int
    importer: str
    target: str

    @property
    def where(self) -> str:
        """``file:line`` relative to the repository."""
        return f"{self.path.relative_to(REPO)}:{self.line}"


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def production_modules() -> list[Path]:
    """Every ``.py`` file of our four packages."""
    return sorted(path for top in TOP_PACKAGES for path in (REPO / top).rglob("*.py"))


def production_packages() -> list[str]:
    """Every package of ours (a directory with ``__init__.py``), found by walking the tree."""
    return sorted(module_name(path) for path in production_modules() if path.name == "__init__.py")


def resolve_import(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` in ``importer`` reads from."""
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path, source: str | None = None) -> Iterator[ImportRef]:
    """Every import of one of our packages in ``path`` (or in ``source``, read as if it were there),
    lazy ones inside functions included.

    ``from a.b import c`` yields ``a.b.c``: ``c`` may be a module or a name, and either may be private.
    A constant-string ``importlib.import_module("a.b")`` counts as an import too.
    """
    importer = module_name(path)
    is_package = path.name == "__init__.py"
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text, str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve_import(importer, is_package, node)
            targets = [f"{base}.{alias.name}" if alias.name != "*" else base for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            if target.split(".")[0] in TOP_PACKAGES:
                yield ImportRef(path, getattr(node, "lineno", 0), importer, target)


def all_imports() -> list[ImportRef]:
    """The imports of our packages made anywhere in production code."""
    return [ref for path in production_modules() for ref in imports_of(path)]


def _offenders(refs: list[ImportRef]) -> str:
    return "\n".join(f"  {ref.where}: {ref.importer} imports {ref.target}" for ref in refs)


# Which top packages each package may import (itself always). capabilities may read the oracle's
# role definition (its tool allow-list) and nothing else of roles: roles is a leaf package.
ALLOWED = {
    "store": {"store"},
    "capabilities": {"capabilities", "store"},
    "supervisor": {"supervisor", "capabilities", "store"},
    "roles": {"roles"},
}
ALLOWED_EXCEPTIONS = {("capabilities", "roles.oracle.MEMORY_ORACLE")}


def _allowed(ref: ImportRef) -> bool:
    source, target = ref.importer.split(".")[0], ref.target.split(".")[0]
    return target in ALLOWED[source] or (source, ref.target) in ALLOWED_EXCEPTIONS


@pytest.mark.parametrize("package", TOP_PACKAGES)
def test_dependencies_point_one_way(package: str) -> None:
    wrong = [ref for ref in all_imports() if ref.importer.split(".")[0] == package and not _allowed(ref)]
    allowed = sorted(ALLOWED[package] - {package})
    assert not wrong, (
        f"{package} may import only {allowed or 'no other package of ours'}"
        f" (supervisor -> capabilities -> store; roles is a leaf):\n{_offenders(wrong)}"
    )


def test_nothing_imports_supervisor() -> None:
    wrong = [
        ref
        for ref in all_imports()
        if ref.target.split(".")[0] == "supervisor" and ref.importer.split(".")[0] != "supervisor"
    ]
    assert not wrong, f"nothing outside supervisor may import it:\n{_offenders(wrong)}"


@pytest.mark.parametrize("package", production_packages())
def test_each_package_imports_on_its_own(package: str) -> None:
    """A fresh interpreter imports the package alone: an import cycle fails here, by name."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {package}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"`python -c 'import {package}'` failed:\n{result.stderr[-3000:]}"


def test_no_module_is_over_the_line_limit() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in production_modules()}
    over = {path: lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES}
    listing = "\n".join(f"  {path.relative_to(REPO)}: {lines} lines" for path, lines in sorted(over.items()))
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them by concept):\n{listing}"


def test_store_keeps_at_most_a_dozen_modules_at_its_top() -> None:
    top = sorted(path.name for path in (REPO / "store").glob("*.py"))
    assert len(top) <= MAX_STORE_TOP_MODULES, (
        f"store/ has {len(top)} modules at its top (at most {MAX_STORE_TOP_MODULES}); move some into"
        f" a subpackage: {top}"
    )


def test_the_scan_sees_every_kind_of_import() -> None:
    """The scanner itself: plain, relative, lazy and ``import_module`` imports are all found."""
    policy = REPO / "capabilities" / "policy.py"
    assert any(ref.target == "roles.oracle.MEMORY_ORACLE" for ref in imports_of(policy))
    source = (
        "import store.db\n"
        "from . import _x\n"
        "from ..serving import y\n"
        "def later():\n"
        "    from supervisor.cli import run\n"
        "    importlib.import_module('roles.runner')\n"
    )
    refs = list(imports_of(REPO / "capabilities" / "mcp" / "__init__.py", source))
    assert [ref.target for ref in refs] == [
        "store.db",
        "capabilities.mcp._x",
        "capabilities.serving.y",
        "supervisor.cli.run",
        "roles.runner",
    ]
    assert [ref.line for ref in refs] == [1, 2, 3, 5, 6]
    assert not _allowed(refs[3]) and not _allowed(refs[4]) and _allowed(refs[0])


_REGEX_CALLS = frozenset({"compile", "match", "search", "fullmatch"})


def _anchored_patterns(path: Path) -> Iterator[str]:
    """``re.compile("^...$")``-style literals: whole-string checks that ``.match`` would let a
    trailing newline through (``$`` matches before a final ``\\n``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _REGEX_CALLS or not isinstance(node.func.value, ast.Name):
            continue
        if node.func.value.id != "re" or not node.args:
            continue
        first = node.args[0]
        text = first.value if isinstance(first, ast.Constant) else None
        if isinstance(text, str) and text.startswith("^") and text.endswith("$"):
            yield f"{path.relative_to(REPO)}:{node.lineno} {text!r}"


def test_whole_string_shapes_use_fullmatch() -> None:
    found = [hit for path in production_modules() for hit in _anchored_patterns(path)]
    assert not found, "use re.fullmatch without ^...$ (a trailing newline passes .match):\n" + "\n".join(
        found
    )


def test_numbers_from_text_are_not_read_with_isdigit() -> None:
    # str.isdigit accepts "²" and "①", on which int() then fails: store.parse_decimal is the one way.
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in production_modules()
        if not path.is_relative_to(REPO / "roles")  # the lexical baseline skips number-like words
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ".isdigit()" in line
    ]
    assert not found, "use store.parse_decimal:\n" + "\n".join(found)
