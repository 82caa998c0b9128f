"""Unified diffs as data: which lines a patch adds and removes, where, and what kind of text they are.

:func:`parse_diff` reads a unified diff (``git diff`` or ``diff -u`` output) into a
:class:`ParsedDiff`: one :class:`FileChange` per file, holding its added and removed
:class:`DiffLine` items with their line numbers (new-file numbers for added lines, old-file
numbers for removed ones). :func:`code_part` strips comments so the judge looks at code only, and
:func:`language_of` and :func:`is_test_path` classify paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import PurePosixPath

__all__ = [
    "MAX_CODE_LINE",
    "DiffLine",
    "FileChange",
    "ParsedDiff",
    "code_lines",
    "code_part",
    "is_doc_path",
    "is_test_path",
    "language_of",
    "parse_diff",
    "path_matches",
]

MAX_CODE_LINE = 2000
"""Characters of one line the judge reads (minified or generated lines are cut, not scanned whole)."""
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_LANGUAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("python", ("*.py", "*.pyi")),
    ("typescript", ("*.ts", "*.tsx", "*.js", "*.jsx", "*.mjs", "*.cjs")),
    ("go", ("*.go",)),
    ("rust", ("*.rs",)),
    ("terraform", ("*.tf", "*.tfvars", "*.hcl")),
    ("docker", ("Dockerfile", "*.Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile")),
    ("ci", (".github/workflows/*", ".gitlab-ci.yml", "*/.gitlab-ci.yml", ".circleci/*", "Jenkinsfile")),
    ("yaml", ("*.yaml", "*.yml")),
    ("sql", ("*.sql",)),
    ("shell", ("*.sh", "*.bash", "Makefile")),
    ("config", ("*.toml", "*.ini", "*.cfg", "*.json", "*.env", ".env*")),
)
_HASH_COMMENTS = frozenset({"python", "terraform", "ci", "yaml", "shell", "config"})
_SLASH_COMMENTS = frozenset({"typescript", "go", "rust", "terraform"})
_DOC_GLOBS = (
    "*.md",
    "*.rst",
    "*.adoc",
    "docs/",
    "CHANGELOG*",
    "LICENSE*",
    "NOTICE*",
    # Linter and policy configuration names the constructs it forbids: a mention, never a use.
    ".eslintrc*",
    "eslint.config.*",
    ".semgrep*",
    "semgrep*.yml",
    "semgrep*.yaml",
    ".hadolint*",
    ".tflint*",
    "*.rego",
    ".checkov*",
    ".kube-linter*",
    ".golangci*",
    "clippy.toml",
    ".ruff.toml",
    "ruff.toml",
    ".pylintrc",
    ".gitleaks*",
    ".pre-commit-config.yaml",
    "policies/",
    "policy/",
)
_TEST_PARTS = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testdata|fixtures)/|(^|/)test_[^/]*$|_test\.(go|py|rs)$"
    r"|\.(test|spec)\.[jt]sx?$|(^|/)conftest\.py$"
)


@dataclass(frozen=True)
class DiffLine:
    """One added or removed line: its file, its line number and its text (without the +/- mark)."""

    path: str
    number: int
    text: str
    added: bool


@dataclass(frozen=True, eq=False)
class FileChange:
    """What a diff does to one file (compared and hashed by identity, so judgments can be cached)."""

    path: str
    old_path: str | None
    added: tuple[DiffLine, ...]
    removed: tuple[DiffLine, ...]

    @property
    def is_new(self) -> bool:
        """True when the diff creates the file."""
        return self.old_path is None

    @property
    def language(self) -> str:
        """The language family of the file (see :func:`language_of`)."""
        return language_of(self.path)


@dataclass(frozen=True)
class ParsedDiff:
    """Every file a diff touches, in diff order."""

    files: tuple[FileChange, ...]

    def added_lines(self) -> list[DiffLine]:
        """All added lines of all files."""
        return [line for change in self.files for line in change.added]

    def removed_lines(self) -> list[DiffLine]:
        """All removed lines of all files."""
        return [line for change in self.files for line in change.removed]


def _strip_prefix(path: str) -> str | None:
    path = path.split("\t", 1)[0].strip()
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


class _Builder:
    def __init__(self) -> None:
        self.files: list[FileChange] = []
        self.old: str | None = None
        self.new: str | None = None
        self.added: list[DiffLine] = []
        self.removed: list[DiffLine] = []

    def flush(self) -> None:
        if self.new is not None or self.old is not None:
            path = self.new if self.new is not None else str(self.old)
            self.files.append(FileChange(path, self.old, tuple(self.added), tuple(self.removed)))
        self.old = self.new = None
        self.added, self.removed = [], []


def parse_diff(text: str) -> ParsedDiff:
    """Parse a unified diff; lines outside hunks (headers, ``diff --git``) are skipped."""
    build = _Builder()
    old_no = new_no = 0
    in_hunk = False
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            build.flush()
            build.old = _strip_prefix(line[4:])
            in_hunk = False
            continue
        if line.startswith("+++ ") and not in_hunk:
            build.new = _strip_prefix(line[4:])
            continue
        match = _HUNK.match(line)
        if match:
            old_no, new_no = int(match.group(1)), int(match.group(2))
            in_hunk = True
            continue
        if not in_hunk or line.startswith("\\"):
            continue
        path = build.new if build.new is not None else str(build.old)
        if line.startswith("+"):
            build.added.append(DiffLine(path, new_no, line[1:], True))
            new_no += 1
        elif line.startswith("-"):
            build.removed.append(DiffLine(path, old_no, line[1:], False))
            old_no += 1
        elif line.startswith(" ") or line == "":
            old_no += 1
            new_no += 1
        else:
            in_hunk = False
    build.flush()
    return ParsedDiff(tuple(build.files))


@lru_cache(maxsize=65536)
def path_matches(path: str, globs: tuple[str, ...]) -> bool:
    """Whether ``path`` matches any glob, tried on the whole path, its name and its directories."""
    if not globs:
        return True
    name = PurePosixPath(path).name
    for glob in globs:
        if glob.endswith("/"):
            if path.startswith(glob) or f"/{glob}" in f"/{path}":
                return True
        elif fnmatch(path, glob) or fnmatch(name, glob) or fnmatch(path, f"*/{glob}"):
            return True
    return False


@lru_cache(maxsize=65536)
def language_of(path: str) -> str:
    """A coarse language family for ``path`` (``python``, ``go``, ``docker``, ``ci``, ... or ``other``)."""
    if path.startswith(".github/workflows/") or path.endswith(".gitlab-ci.yml"):
        return "ci"
    for language, globs in _LANGUAGES:
        if path_matches(path, globs):
            return language
    return "other"


@lru_cache(maxsize=65536)
def is_test_path(path: str) -> bool:
    """Whether ``path`` looks like test code or test data."""
    return _TEST_PARTS.search(path) is not None


@lru_cache(maxsize=65536)
def is_doc_path(path: str) -> bool:
    """Whether ``path`` is documentation or linter/policy configuration (it mentions code, never runs it)."""
    return path_matches(path, _DOC_GLOBS)


def _cut_at(text: str, marker: str, quotes: str) -> str:
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = None
        elif char in quotes:
            quote = char
        elif text.startswith(marker, index):
            return text[:index]
        index += 1
    return text


def code_part(text: str, language: str) -> str:
    """``text`` without its comment: empty for a comment line, cut before a trailing comment."""
    stripped = text.strip()
    markers = ["--"] if language == "sql" else []
    if language in _HASH_COMMENTS:
        markers.append("#")
    if language in _SLASH_COMMENTS:
        markers.append("//")
    if stripped.startswith(("/*", "*", "<!--", '"""', "'''")) and language not in ("yaml", "ci", "docker"):
        return ""
    if language == "docker" and stripped.startswith("#"):
        return ""
    code = text
    for marker in markers:
        if language == "yaml" or language == "ci":
            # YAML comments start a line or follow whitespace; "#" inside values is common.
            if stripped.startswith("#"):
                return ""
            code = re.split(r"\s#", code, maxsplit=1)[0] if " #" in code or "\t#" in code else code
            continue
        code = _cut_at(code, marker, '"' if language == "rust" else "\"'`")
    return code if code.strip() else ""


def code_lines(change: FileChange) -> list[tuple[DiffLine, str]]:
    """The added lines of ``change`` with their code part, skipping block comments and docstrings.

    Block state (``/* ... */``, Python triple-quoted strings on their own lines) is tracked across
    consecutive added lines only: a block opened in an unchanged line is not seen.
    """
    language = change.language
    if is_doc_path(change.path):
        return []
    out: list[tuple[DiffLine, str]] = []
    in_block: str | None = None
    for line in change.added:
        stripped = line.text.strip()
        if in_block is not None:
            if in_block in stripped:
                in_block = None
            continue
        if language == "python" and stripped[:3] in ('"""', "'''"):
            fence = stripped[:3]
            if stripped.count(fence) == 1:
                in_block = fence
            continue
        if language in _SLASH_COMMENTS and stripped.startswith("/*"):
            if "*/" not in stripped:
                in_block = "*/"
            continue
        code = code_part(line.text[:MAX_CODE_LINE], language)
        if code:
            out.append((line, code))
    return out
