"""Unified diffs: parsing and validating a patch on arrival.

A patch is untrusted text. :func:`parse_diff` accepts git-style diffs (``diff --git`` sections with
extended headers) and plain ``diff -u`` output, and refuses with ``invalid_argument``:

- text that is not UTF-8, carries NUL bytes, or is larger than the configured limit;
- malformed structure: no file section, a hunk without a file header, a hunk whose body is
  shorter or longer than its ``@@`` header says, a bad ``@@`` header;
- paths that are empty, absolute, contain ``.``/``..``/empty components, control characters or
  backslashes, or that reach into ``.git`` or ``.roundtable``;
- anything but regular files: symlink (``120000``), gitlink (``160000``), device or other mode
  lines, binary patches, copies; a file touched by two sections.

The result lists every touched path; :mod:`store.patches._hunks` applies it to file contents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from store.errors import InvalidArgument

__all__ = ["FileDiff", "Hunk", "HunkLine", "ParsedDiff", "check_repo_path", "decode_patch", "parse_diff"]

REGULAR_MODES = frozenset({"100644", "100755"})
MAX_PATH_CHARS = 4096
# ASCII digits: \d would take "١", which git does not.
_HUNK_HEADER = re.compile(r"^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@")
_MODE_HEADERS = ("old mode ", "new mode ", "deleted file mode ", "new file mode ")
_IGNORED_HEADERS = ("index ", "similarity index ", "dissimilarity index ")
_OCTAL = re.compile(r"[0-7]{3}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RESERVED_TOP = frozenset({".roundtable"})
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


@dataclass(frozen=True)
class HunkLine:
    """One body line of a hunk: its tag (`` ``, ``+``, ``-``) and its bytes, newline included."""

    tag: str
    text: bytes


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[HunkLine, ...]

    def old_lines(self) -> list[bytes]:
        """The lines the hunk expects to find (context and removals)."""
        return [line.text for line in self.lines if line.tag != "+"]

    def new_lines(self) -> list[bytes]:
        """The lines the hunk leaves (context and additions)."""
        return [line.text for line in self.lines if line.tag != "-"]


@dataclass(frozen=True)
class FileDiff:
    """The change to one file. ``old_path`` is ``None`` for a creation, ``new_path`` for a deletion."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]
    new_mode: str | None = None

    @property
    def path(self) -> str:
        """The path the file has after the patch (or had, for a deletion)."""
        path = self.new_path or self.old_path
        assert path is not None
        return path

    @property
    def kind(self) -> str:
        """``create``, ``delete``, ``rename`` or ``modify``."""
        if self.old_path is None:
            return "create"
        if self.new_path is None:
            return "delete"
        return "rename" if self.old_path != self.new_path else "modify"


@dataclass(frozen=True)
class ParsedDiff:
    """A validated patch: its file sections and the ``-p`` level its paths use (0 or 1)."""

    files: tuple[FileDiff, ...]
    strip: int

    def touched_files(self) -> list[str]:
        """Every path the patch reads or writes, sorted."""
        paths = {p for f in self.files for p in (f.old_path, f.new_path) if p is not None}
        return sorted(paths)


def decode_patch(data: bytes, *, max_bytes: int) -> str:
    """Bytes read from a file as patch text: size-checked, then strict UTF-8."""
    if len(data) > max_bytes:
        raise InvalidArgument(
            f"the patch is {len(data)} bytes; the limit is {max_bytes} (policy.max_patch_bytes)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"the patch is not valid UTF-8 (byte {exc.start})") from None


def check_repo_path(path: str) -> str:
    """A repository-relative path, refused unless it stays inside the repository."""
    if not path:
        raise InvalidArgument("a patch path is empty")
    shown = path[:200]
    if len(path) > MAX_PATH_CHARS:
        raise InvalidArgument(f"a patch path is longer than {MAX_PATH_CHARS} characters")
    if _CONTROL.search(path) or "\\" in path:
        raise InvalidArgument(f"patch path {shown!r} contains control characters or backslashes")
    if path.startswith("/"):
        raise InvalidArgument(f"patch path {shown!r} is absolute")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidArgument(f"patch path {shown!r} escapes the repository or is not canonical")
    if any(part.casefold() == ".git" for part in parts) or parts[0].casefold() in _RESERVED_TOP:
        raise InvalidArgument(f"patch path {shown!r} reaches into .git or .roundtable")
    return path


def parse_diff(text: str, *, max_bytes: int) -> ParsedDiff:
    """Parse and validate a unified diff; see the module docstring for what is refused."""
    if not isinstance(text, str):
        raise InvalidArgument("the patch must be text")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument("the patch is not valid UTF-8 (it holds an unpaired surrogate)") from None
    if size > max_bytes:
        raise InvalidArgument(f"the patch is {size} bytes; the limit is {max_bytes} (policy.max_patch_bytes)")
    if "\x00" in text:
        raise InvalidArgument("the patch contains NUL bytes")
    parser = _Parser(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"))
    return parser.parse()


class _Parser:
    """A line cursor over the patch; each method consumes one syntactic unit."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.i = 0
        self.strips: set[int] = set()

    def _peek(self, offset: int = 0) -> str | None:
        index = self.i + offset
        return self.lines[index] if index < len(self.lines) else None

    def _fail(self, message: str) -> InvalidArgument:
        return InvalidArgument(f"malformed diff at line {self.i + 1}: {message}")

    def parse(self) -> ParsedDiff:
        files: list[FileDiff] = []
        while (line := self._peek()) is not None:
            if line.startswith("diff --git "):
                files.append(self._git_section())
            elif line.startswith("--- ") and (self._peek(1) or "").startswith("+++ "):
                files.append(self._plain_section())
            elif line.startswith("@@"):
                raise self._fail("a hunk without a file header")
            else:
                self.i += 1  # preamble (commit message, mail headers, "diff -u ..." lines)
        if not files:
            raise InvalidArgument("malformed diff: no file section (expected 'diff --git' or '---'/'+++')")
        if len(self.strips) > 1:
            raise InvalidArgument("malformed diff: some paths carry a/ b/ prefixes and others do not")
        seen: set[str] = set()
        for diff in files:
            for path in {diff.old_path, diff.new_path} - {None}:
                assert path is not None
                if path in seen:
                    raise InvalidArgument(f"the patch touches {path!r} in more than one section")
                seen.add(path)
        return ParsedDiff(tuple(files), self.strips.pop() if self.strips else 1)

    # -- file sections -------------------------------------------------------------------------

    def _git_section(self) -> FileDiff:
        start = self.i
        header_paths = _split_git_header(self.lines[self.i][len("diff --git ") :])
        self.i += 1
        old_mode = new_mode = None
        created = deleted = False
        rename_from = rename_to = None
        while (line := self._peek()) is not None:
            if line.startswith(_MODE_HEADERS):
                mode = line.rsplit(" ", 1)[1]
                if mode not in REGULAR_MODES:
                    raise InvalidArgument(
                        f"line {self.i + 1}: mode {mode} is not a regular file; symlinks, submodules "
                        "and special files are not accepted"
                    )
                created = created or line.startswith("new file mode ")
                deleted = deleted or line.startswith("deleted file mode ")
                if line.startswith(("new mode ", "new file mode ")):
                    new_mode = mode
                else:
                    old_mode = mode
            elif line.startswith("rename from "):
                rename_from = _unquote(line[len("rename from ") :])
            elif line.startswith("rename to "):
                rename_to = _unquote(line[len("rename to ") :])
            elif line.startswith(("copy from ", "copy to ")):
                raise InvalidArgument(f"line {self.i + 1}: copy patches are not supported")
            elif line.startswith(("Binary files ", "GIT binary patch")):
                raise InvalidArgument(f"line {self.i + 1}: binary patches are not supported")
            elif not line.startswith(_IGNORED_HEADERS):
                break
            self.i += 1
        old_path: str | None
        new_path: str | None
        if (self._peek() or "").startswith("--- "):
            old_path, new_path = self._file_headers()
        elif rename_from is not None and rename_to is not None:
            old_path, new_path = rename_from, rename_to
        elif header_paths is not None:
            old_path, new_path = header_paths
            self.strips.add(1)
        else:
            self.i = start
            raise self._fail("cannot tell which file this 'diff --git' section changes")
        if rename_from is not None and (rename_from, rename_to) != (old_path, new_path):
            raise self._fail("the rename headers disagree with the file headers")
        if created:
            old_path = None
        if deleted:
            new_path = None
        if old_path is None and new_path is None:
            raise self._fail("a section that both creates and deletes its file")
        hunks = self._hunks()
        if not hunks and old_mode == new_mode and not (created or deleted or rename_from):
            raise self._fail("a 'diff --git' section with no change")
        return _checked(FileDiff(old_path, new_path, hunks, new_mode))

    def _plain_section(self) -> FileDiff:
        old_path, new_path = self._file_headers()
        if old_path is None and new_path is None:
            raise self._fail("both sides are /dev/null")
        hunks = self._hunks()
        if not hunks:
            raise self._fail("a file header with no hunk")
        return _checked(FileDiff(old_path, new_path, hunks))

    def _file_headers(self) -> tuple[str | None, str | None]:
        plus = self._peek(1) or ""
        if not plus.startswith("+++ "):
            raise self._fail("a '---' line not followed by '+++'")
        old_raw = _header_path(self.lines[self.i][4:])
        new_raw = _header_path(plus[4:])
        self.i += 2
        prefixed = all(p is None or p.startswith(pre) for p, pre in ((old_raw, "a/"), (new_raw, "b/")))
        if old_raw is None and new_raw is None:
            return None, None
        self.strips.add(1 if prefixed else 0)
        old = old_raw[2:] if prefixed and old_raw is not None else old_raw
        new = new_raw[2:] if prefixed and new_raw is not None else new_raw
        return old, new

    # -- hunks ---------------------------------------------------------------------------------

    def _hunks(self) -> tuple[Hunk, ...]:
        hunks: list[Hunk] = []
        while (self._peek() or "").startswith("@@"):
            hunk = self._hunk()
            if hunks and hunk.old_start < hunks[-1].old_start + hunks[-1].old_count:
                raise self._fail("hunks overlap or are out of order")
            hunks.append(hunk)
        return tuple(hunks)

    def _hunk(self) -> Hunk:
        match = _HUNK_HEADER.match(self.lines[self.i])
        if match is None:
            raise self._fail("a bad '@@' hunk header")
        old_start, new_start = int(match[1]), int(match[3])
        old_count = 1 if match[2] is None else int(match[2])
        new_count = 1 if match[4] is None else int(match[4])
        if (old_start == 0 and old_count) or (new_start == 0 and new_count):
            raise self._fail("a hunk that starts at line 0 but has lines")
        self.i += 1
        body: list[HunkLine] = []
        old_left, new_left = old_count, new_count
        while old_left or new_left:
            line = self._peek()
            if line is None:
                raise self._fail("the patch ends inside a hunk (shorter than its header says)")
            tag = line[:1] or " "  # an empty line is an empty context line (GNU diff and git agree)
            if tag == "\\":
                body = self._no_newline(body)
                continue
            if tag not in " +-":
                raise self._fail("the hunk is shorter than its header says")
            old_left -= tag != "+"
            new_left -= tag != "-"
            if old_left < 0 or new_left < 0:
                raise self._fail("the hunk is longer than its header says")
            body.append(HunkLine(tag, line[1:].encode("utf-8") + b"\n"))
            self.i += 1
        while (self._peek() or "").startswith("\\"):
            body = self._no_newline(body)
        following = self._peek()
        if following is not None and following[:1] in ("+", "-", " ") and not self._at_boundary(following):
            raise self._fail("the hunk is longer than its header says")
        return Hunk(old_start, old_count, new_start, new_count, tuple(body))

    def _at_boundary(self, line: str) -> bool:
        """Whether ``line`` legitimately follows a hunk: a file header or a mail signature."""
        return line == "-- " or (line.startswith("--- ") and (self._peek(1) or "").startswith("+++ "))

    def _no_newline(self, body: list[HunkLine]) -> list[HunkLine]:
        """``\\ No newline at end of file``: the previous line has no newline."""
        if not body or not body[-1].text.endswith(b"\n"):
            raise self._fail("a '\\ No newline' marker in the wrong place")
        last = body[-1]
        self.i += 1
        return [*body[:-1], HunkLine(last.tag, last.text[:-1])]


def _checked(diff: FileDiff) -> FileDiff:
    for path in (diff.old_path, diff.new_path):
        if path is not None:
            check_repo_path(path)
    for hunk in diff.hunks:
        if diff.old_path is None and hunk.old_count:
            raise InvalidArgument(f"{diff.path}: a created file's hunk removes or keeps lines")
        if diff.new_path is None and hunk.new_count:
            raise InvalidArgument(f"{diff.path}: a deleted file's hunk keeps or adds lines")
    return diff


def _header_path(raw: str) -> str | None:
    """The path of a ``---``/``+++`` line: unquoted, without a trailing date; ``None`` for /dev/null."""
    path = _unquote(raw) if raw.startswith('"') else raw.split("\t", 1)[0]
    return None if path == "/dev/null" else path


def _split_git_header(rest: str) -> tuple[str, str] | None:
    """``a/X b/X`` from a ``diff --git`` line, when both halves name the same file."""
    if rest.startswith('"'):
        return None
    if len(rest) % 2 == 1 and rest.startswith("a/"):
        half = (len(rest) - 5) // 2
        name = rest[2 : 2 + half]
        if rest == f"a/{name} b/{name}":
            return name, name
    return None


def _unquote(raw: str) -> str:
    """Git's C-style quoted path (``"caf\\303\\251"``); an unquoted path comes back unchanged."""
    if not raw.startswith('"'):
        return raw
    if len(raw) < 2 or not raw.endswith('"'):
        raise InvalidArgument(f"malformed quoted path {raw[:200]!r}")
    out = bytearray()
    body, i = raw[1:-1], 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
        elif _OCTAL.fullmatch(body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        elif body[i + 1 : i + 2] in _C_ESCAPES:
            out.append(_C_ESCAPES[body[i + 1]])
            i += 2
        else:
            raise InvalidArgument(f"malformed quoted path {raw[:200]!r}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"quoted path {raw[:200]!r} is not UTF-8") from None
