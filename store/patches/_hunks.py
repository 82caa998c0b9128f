"""Applying a parsed diff to file contents, in memory.

Pure functions over bytes: no file is touched here, so validation (on copies) and the real apply
(:mod:`store.work._apply`) compute exactly the same result. Like ``git apply`` a hunk may land at an
offset from the line its header names (the nearest match wins) but context is never fuzzed: every
context and removed line must match byte for byte, line endings included.
"""

from __future__ import annotations

from collections.abc import Mapping

from store.patches._diffs import FileDiff, ParsedDiff

__all__ = ["PatchDoesNotApply", "apply_diff", "apply_file", "split_lines"]


class PatchDoesNotApply(Exception):
    """The patch does not apply to the current contents; the message says where."""


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their ``\\n`` kept (a final line without one is kept as it is); only ``\\n`` splits."""
    if not data:
        return []
    lines = [line + b"\n" for line in data.split(b"\n")]
    if data.endswith(b"\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def apply_file(old: bytes | None, diff: FileDiff) -> bytes | None:
    """The contents after ``diff``; ``None`` when the file is deleted. ``old`` is ``None`` if absent."""
    if diff.kind == "create":
        if old is not None:
            raise PatchDoesNotApply(f"{diff.path}: the patch creates it but it already exists")
        old = b""
    elif old is None:
        raise PatchDoesNotApply(f"{diff.old_path}: the patch changes it but it does not exist")
    lines = split_lines(old)
    out: list[bytes] = []
    position = 0
    offset = 0
    for hunk in diff.hunks:
        expected = hunk.old_lines()
        wanted = (hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1) + offset
        found = _find(lines, expected, wanted, position)
        if found is None:
            raise PatchDoesNotApply(
                f"{diff.old_path or diff.path}: the hunk at line {hunk.old_start} does not match the file"
            )
        out.extend(lines[position:found])
        out.extend(hunk.new_lines())
        position = found + len(expected)
        offset = found - (hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1)
    out.extend(lines[position:])
    result = b"".join(out)
    if diff.kind == "delete":
        if result:
            raise PatchDoesNotApply(f"{diff.path}: the patch deletes it but the file has other content")
        return None
    return result


def _find(lines: list[bytes], expected: list[bytes], wanted: int, floor: int) -> int | None:
    """The start nearest to ``wanted`` (not before ``floor``) where ``expected`` matches."""
    last = len(lines) - len(expected)
    if last < floor:
        return None
    wanted = min(max(wanted, floor), last)
    for distance in range(max(wanted - floor, last - wanted) + 1):
        for start in (wanted - distance, wanted + distance) if distance else (wanted,):
            if floor <= start <= last and lines[start : start + len(expected)] == expected:
                return start
    return None


def apply_diff(parsed: ParsedDiff, contents: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """The new contents of every touched path (``None``: absent after the patch).

    ``contents`` maps each touched path to its current bytes (``None`` when absent). A rename
    leaves its old path absent.
    """
    result: dict[str, bytes | None] = {}
    for diff in parsed.files:
        old = contents.get(diff.old_path) if diff.old_path is not None else None
        if diff.kind == "rename" and contents.get(diff.path) is not None:
            raise PatchDoesNotApply(f"{diff.path}: the patch renames onto it but it already exists")
        new = apply_file(old, diff)
        if diff.kind == "rename":
            assert diff.old_path is not None
            result[diff.old_path] = None
        result[diff.path] = new
    return result
