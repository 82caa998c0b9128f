"""Parsing and validating unified diffs, and applying them in memory."""

from __future__ import annotations

import contextlib
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import InvalidArgument
from store.patches._diffs import check_repo_path, decode_patch, parse_diff
from store.patches._hunks import PatchDoesNotApply, apply_diff, apply_file, split_lines

LIMIT = 1 << 20

MODIFY = """\
diff --git a/src/app.py b/src/app.py
index 83db48f..bf269f4 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
"""


def test_git_diff_lists_touched_files_and_strip_level() -> None:
    parsed = parse_diff(MODIFY, max_bytes=LIMIT)
    assert parsed.touched_files() == ["src/app.py"]
    assert parsed.strip == 1
    (diff,) = parsed.files
    assert diff.kind == "modify"
    assert apply_file(b"one\ntwo\nthree\n", diff) == b"one\nTWO\nthree\n"


def test_plain_diff_u_with_dates_and_no_prefix() -> None:
    text = "--- notes.txt\t2024-01-01 00:00:00\n+++ notes.txt\t2024-01-02 00:00:00\n@@ -1 +1,2 @@\n a\n+b\n"
    parsed = parse_diff(text, max_bytes=LIMIT)
    assert parsed.touched_files() == ["notes.txt"] and parsed.strip == 0
    assert apply_diff(parsed, {"notes.txt": b"a\n"}) == {"notes.txt": b"a\nb\n"}


def test_create_delete_rename_and_executable_mode() -> None:
    text = (
        "diff --git a/bin/run b/bin/run\nnew file mode 100755\n--- /dev/null\n+++ b/bin/run\n"
        "@@ -0,0 +1 @@\n+#!/bin/sh\n"
        "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-bye\n"
        "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
    )
    parsed = parse_diff(text, max_bytes=LIMIT)
    kinds = {d.path: d.kind for d in parsed.files}
    assert kinds == {"bin/run": "create", "old.txt": "delete", "b.txt": "rename"}
    assert parsed.files[0].new_mode == "100755"
    assert parsed.touched_files() == ["a.txt", "b.txt", "bin/run", "old.txt"]
    after = apply_diff(parsed, {"bin/run": None, "old.txt": b"bye\n", "a.txt": b"x\n", "b.txt": None})
    assert after == {"bin/run": b"#!/bin/sh\n", "old.txt": None, "a.txt": None, "b.txt": b"x\n"}


def test_no_newline_at_end_of_file_markers() -> None:
    text = (
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n"
        "+new\n\\ No newline at end of file\n"
    )
    (diff,) = parse_diff(text, max_bytes=LIMIT).files
    assert apply_file(b"old", diff) == b"new"
    with pytest.raises(PatchDoesNotApply):
        apply_file(b"old\n", diff)  # the newline is part of the match


def test_quoted_paths_are_unquoted() -> None:
    text = '--- "a/caf\\303\\251.txt"\n+++ "b/caf\\303\\251.txt"\n@@ -1 +1 @@\n-x\n+y\n'
    assert parse_diff(text, max_bytes=LIMIT).touched_files() == ["café.txt"]


def test_hunks_apply_at_an_offset_but_never_with_fuzz() -> None:
    (diff,) = parse_diff(MODIFY, max_bytes=LIMIT).files
    assert apply_file(b"zero\nzero\none\ntwo\nthree\n", diff) == b"zero\nzero\none\nTWO\nthree\n"
    with pytest.raises(PatchDoesNotApply, match="does not match"):
        apply_file(b"one\ntwo!\nthree\n", diff)


def test_mail_signature_after_the_last_hunk_is_ignored() -> None:
    assert parse_diff(MODIFY + "-- \n2.39.0\n", max_bytes=LIMIT).touched_files() == ["src/app.py"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no file section"),
        ("just some words\n", "no file section"),
        ("@@ -1 +1 @@\n-a\n+b\n", "hunk without a file header"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n", "shorter than its header"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n", "longer than its header"),
        ("--- a/f\n+++ b/f\n@@ bogus @@\n", "bad '@@'"),
        ("--- a/f\n+++ b/f\n@@ -\u0661 +\u0661 @@\n-a\n+b\n", "bad '@@'"),  # Arabic-Indic digits
        ("--- a/f\n+++ b/f\n@@ -1,\uff11 +1 @@\n-a\n", "bad '@@'"),  # a fullwidth digit
        ("--- a/f\n+++ b/f\n", "no hunk"),
        ("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "escapes the repository"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "absolute"),
        ("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", ".git"),
        ("--- a/.roundtable/x\n+++ b/.roundtable/x\n@@ -1 +1 @@\n-a\n+b\n", ".roundtable"),
        ("--- a/f\x00\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "NUL"),
        (
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n",
            "120000",
        ),
        ("diff --git a/d b/d\nnew file mode 020000\n", "020000"),
        ("diff --git a/m b/m\nnew file mode 160000\n", "160000"),
        ("diff --git a/b b/b\nindex 1..2 100644\nBinary files a/b and b/b differ\n", "binary"),
        ("diff --git a/x b/y\ncopy from x\ncopy to y\n", "copy"),
        (MODIFY + MODIFY, "more than one section"),
        ("--- a/f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n", "prefixes"),
    ],
)
def test_malformed_or_hostile_diffs_are_invalid_argument(text: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_diff(text, max_bytes=LIMIT)


def test_size_and_encoding_limits() -> None:
    with pytest.raises(InvalidArgument, match="limit"):
        parse_diff(MODIFY, max_bytes=10)
    with pytest.raises(InvalidArgument, match="UTF-8"):
        decode_patch(b"--- a/f\n+++ b/f\n\xff\n", max_bytes=LIMIT)
    with pytest.raises(InvalidArgument, match="limit"):
        decode_patch(b"x" * 11, max_bytes=10)
    with pytest.raises(InvalidArgument, match="surrogate"):
        parse_diff("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-\ud800\n+b\n", max_bytes=LIMIT)


@pytest.mark.parametrize("path", ["a\\b", "a//b", "./a", "a/./b", "a/", "tab\there", ".GIT/x", "x/.git/y"])
def test_check_repo_path_refuses(path: str) -> None:
    with pytest.raises(InvalidArgument):
        check_repo_path(path)


def test_split_lines_keeps_endings() -> None:
    assert split_lines(b"") == []
    assert split_lines(b"a\r\nb") == [b"a\r\n", b"b"]
    assert split_lines(b"a\n\n") == [b"a\n", b"\n"]


_line = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=8).map(lambda s: s + "\n")
_lines = st.lists(_line, max_size=30)


@settings(max_examples=150, deadline=None)
@given(old=_lines, new=_lines)
def test_difflib_diffs_round_trip(old: list[str], new: list[str]) -> None:
    """Whatever difflib produces, we parse and apply back to exactly the new text."""
    if old == new:
        return
    text = "".join(difflib.unified_diff(old, new, "a/f.txt", "b/f.txt"))
    parsed = parse_diff(text, max_bytes=LIMIT)
    after = apply_diff(parsed, {"f.txt": "".join(old).encode()})
    assert after == {"f.txt": "".join(new).encode()}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_parses_or_is_invalid_argument(text: str) -> None:
    with contextlib.suppress(InvalidArgument):
        parse_diff(text, max_bytes=LIMIT)
