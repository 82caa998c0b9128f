"""Docs that are tested: every MCP tool and every CLI command appears in docs/; every page is
reachable from docs/index.md; the docs name only files, modules and tests that exist and nothing a
user does not have; docs/development.md draws every room of the layout."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from capabilities.mcp.tools import build_registry
from supervisor.cli._main import build_parser
from tests.test_layout import REPO, TOP_PACKAGES, production_modules, production_packages

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:\.ci|benchmarks|deploy|docs|tests|" + "|".join(TOP_PACKAGES) + r")/[\w./*-]*)"
)
TEST_REF = re.compile(r"(?<![\w/])((?:[\w-]+/)*test_\w+\.py)(?:::(\w+))?")
DOTTED = re.compile(r"(?<![\w.\[/-])((?:benchmarks|" + "|".join(TOP_PACKAGES) + r")(?:\.\w+)+)")

UNAVAILABLE = {
    "the specification pack": re.compile(
        r"CONTRACTS\.md|SECURITY\.md|ARCHITECTURE\.md|STYLE\.md|\.\./shared"
        r"|spec pack|\b[Tt]he spec(?:'s|ification)\b"
    ),
    "an issue number": re.compile(r"\bissues?\s+#?\d+|(?<![\w&])#\d+\b", re.IGNORECASE),
    "the seed": re.compile(r"\bthe seed\b|\bseed(?:'s)? (?:text|code|version)\b", re.IGNORECASE),
}
"""What a user of Roundtable does not have: say what the behaviour is instead."""


def _all_docs() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md")))


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(REPO)}:{line}"


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, (*prefix, name))
                found.extend(nested or [" ".join((*prefix, name))])
    return found


def test_every_tool_is_documented() -> None:
    text = _all_docs()
    missing = [name for name in build_registry().names() if f"`{name}" not in text]
    assert not missing, f"tools missing from docs/: {missing}"


def test_every_cli_command_is_in_the_cli_reference() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    commands = _commands(build_parser(), ("roundtable",))
    assert len(commands) > 20
    missing = [command for command in commands if f"`{command}" not in text]
    assert not missing, f"commands missing from docs/cli.md: {missing}"


def _links(path: Path) -> Iterator[tuple[int, Path]]:
    """The local files ``path`` links to (web links and in-page anchors left out)."""
    for number, line in _lines(path):
        for target in LINK.findall(line):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            yield number, (path.parent / target.split("#")[0]).resolve()


def test_every_link_leads_to_a_file() -> None:
    broken = [
        f"  {_where(page, number)}: {target.relative_to(REPO) if target.is_relative_to(REPO) else target}"
        for page in PAGES
        for number, target in _links(page)
        if not target.exists()
    ]
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_every_page_is_reachable_from_the_index() -> None:
    seen, queue = {DOCS / "index.md"}, [DOCS / "index.md"]
    while queue:
        for _, target in _links(queue.pop()):
            if target.suffix == ".md" and target.parent == DOCS and target.exists() and target not in seen:
                seen.add(target)
                queue.append(target)
    unreachable = sorted(page.name for page in DOCS.glob("*.md") if page not in seen)
    assert not unreachable, f"pages no link from docs/index.md leads to (link them): {unreachable}"


def test_the_docs_name_nothing_a_user_does_not_have() -> None:
    found = [
        f"  {_where(page, number)}: {what}: {line.strip()}"
        for page in PAGES
        for number, line in _lines(page)
        for what, pattern in UNAVAILABLE.items()
        if pattern.search(line)
    ]
    assert not found, "say what the behaviour is instead of pointing at:\n" + "\n".join(found)


def _exists(path: str) -> bool:
    return any(REPO.glob(path.rstrip("/"))) if "*" in path else (REPO / path).exists()


def test_every_path_named_in_the_docs_exists() -> None:
    missing = [
        f"  {_where(page, number)}: {path}"
        for page in PAGES
        for number, line in _lines(page)
        for path in (match.rstrip(".,:;") for match in REPO_PATH.findall(line))
        if not _exists(path)
    ]
    assert not missing, "paths in the docs that do not exist (the layout moved?):\n" + "\n".join(missing)


def _defines(path: Path, name: str) -> bool:
    return (
        re.search(rf"^\s*(?:async\s+)?def {name}\(", path.read_text(encoding="utf-8"), re.MULTILINE)
        is not None
    )


def test_every_test_named_in_the_docs_exists() -> None:
    test_files = sorted((REPO / "tests").rglob("test_*.py"))
    missing = []
    for page in PAGES:
        for number, line in _lines(page):
            for file, function in TEST_REF.findall(line):
                if "/" in file and not function:
                    continue  # a path: test_every_path_named_in_the_docs_exists checks it
                candidates = [path for path in test_files if path.as_posix().endswith("/" + file)]
                if not candidates or (function and not any(_defines(path, function) for path in candidates)):
                    missing.append(f"  {_where(page, number)}: {file}{'::' + function if function else ''}")
    assert not missing, "tests the docs name that do not exist:\n" + "\n".join(missing)


def _resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module of ours, or an attribute chain under one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_module_named_in_the_docs_exists() -> None:
    missing: list[str] = []
    for page in PAGES:
        prose = FENCE.sub(lambda block: "\n" * block.group().count("\n"), page.read_text(encoding="utf-8"))
        for number, line in enumerate(prose.splitlines(), start=1):
            for span in CODE_SPAN.findall(line):
                missing.extend(
                    f"  {_where(page, number)}: {name}"
                    for name in DOTTED.findall(span)
                    if not _resolves(name)
                )
    assert not missing, "modules or names in the docs that do not exist:\n" + "\n".join(missing)


def _layout_tree() -> set[str]:
    """The paths drawn in docs/development.md's layout tree (its first code block)."""
    text = (DOCS / "development.md").read_text(encoding="utf-8")
    block = FENCE.search(text)
    assert block is not None, "docs/development.md has no layout tree"
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in block.group().splitlines()[1:-1]:
        match = re.match(r"^( *)(\S+)", line)
        if match is None:
            continue
        indent, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (stack[-1][1] if stack else "") + name
        paths.add(path)
        if name.endswith("/"):
            stack.append((indent, path))
    return paths


def test_the_layout_tree_shows_every_room() -> None:
    tree = _layout_tree()
    rooms = {package.replace(".", "/") + "/" for package in production_packages()}
    rooms |= {
        path.relative_to(REPO).as_posix()
        for path in production_modules()
        if path.parent.parent == REPO and not path.name.startswith("__")
    }
    rooms |= {"tests/", "benchmarks/", "deploy/", "docs/"}
    assert not rooms - tree, f"rooms missing from the tree in docs/development.md: {sorted(rooms - tree)}"
    drawn = {path for path in tree if not (REPO / path).exists()}
    assert not drawn, f"the tree in docs/development.md draws what does not exist: {sorted(drawn)}"
