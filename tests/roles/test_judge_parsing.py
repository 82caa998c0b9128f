"""The judge's readers: decision polarity and spans, and unified diffs."""

from __future__ import annotations

import pytest

from roles.providers.judge.diff import code_part, is_doc_path, is_test_path, language_of, parse_diff
from roles.providers.judge.polarity import Polarity, SpanRole, parse_entry, polarity_of


def _rule(body: str, *, kind: str = "decision", title: str = "T") -> list[tuple[str, list[tuple[str, str]]]]:
    rule = parse_entry({"id": "M-1", "kind": kind, "title": title, "body_md": body})
    return [(c.polarity.value, [(s.text, s.role.value) for s in c.spans]) for c in rule.clauses[1:]]


@pytest.mark.parametrize(
    ("sentence", "polarity"),
    [
        ("Never disable certificate verification.", Polarity.PROHIBITION),
        ("Services must not call the billing DB directly.", Polarity.PROHIBITION),
        ("No raw SQL.", Polarity.PROHIBITION),
        ("Nothing on the internet may reach a database port.", Polarity.PROHIBITION),
        ("CODE is deprecated.", Polarity.PROHIBITION),
        ("All timestamps must be UTC.", Polarity.OBLIGATION),
        ("Every container declares limits.", Polarity.OBLIGATION),
        ("Prefer the task queue for mail.", Polarity.PREFERENCE),
        ("Handlers should stay small.", Polarity.PREFERENCE),
        ("Tests may unwrap.", Polarity.PERMISSION),
        ("The gateway listens on 8443.", Polarity.FACT),
    ],
)
def test_polarity_of_a_sentence(sentence: str, polarity: Polarity) -> None:
    assert polarity_of(sentence) is polarity


def test_spans_split_into_forbidden_and_required() -> None:
    clauses = _rule("Use `yaml.safe_load` for every file; `yaml.load` is banned.")
    assert clauses == [
        ("obligation", [("yaml.safe_load", "required")]),
        ("prohibition", [("yaml.load", "forbidden")]),
    ]
    assert _rule("Images install with `npm ci`, not `npm install`.") == [
        ("prohibition", [("npm ci", "required"), ("npm install", "forbidden")])
    ]
    assert _rule("The `unsafe` keyword is not permitted in the parser.") == [
        ("prohibition", [("unsafe", "forbidden")])
    ]


def test_a_call_named_as_the_place_is_context() -> None:
    clauses = _rule("Do not pass f-strings or concatenated strings to `cursor.execute`.")
    assert clauses == [("prohibition", [("cursor.execute", "context")])]


def test_notes_and_summaries_are_facts_whatever_they_say() -> None:
    for kind in ("note", "summary", "fact"):
        rule = parse_entry({"id": "M", "kind": kind, "title": "x", "body_md": "Never use `verify=False`."})
        assert not rule.governs
        assert {c.polarity for c in rule.clauses} == {Polarity.FACT}


def test_paths_tests_and_languages_are_read_from_the_text() -> None:
    rule = parse_entry(
        {
            "id": "M",
            "kind": "constraint",
            "title": "x",
            "body_md": "Packages under pkg/ must not call `panic`.",
        }
    )
    assert rule.clauses[1].paths == ("pkg/",)
    assert rule.clauses[1].spans[0].role is SpanRole.FORBIDDEN
    exempt = parse_entry({"id": "M", "kind": "decision", "title": "x", "body_md": "No unwrap outside tests."})
    assert exempt.tests_exempt
    python = parse_entry(
        {"id": "M", "kind": "decision", "title": "x", "body_md": "Python code never prints."}
    )
    assert python.languages == ("python",)


_DIFF = """\
diff --git a/app/x.py b/app/x.py
--- a/app/x.py
+++ b/app/x.py
@@ -10,4 +10,5 @@ def f():
 keep = 1
-    old = requests.get(url, verify=False)
+    new = requests.get(url, timeout=5)  # not verify=False any more
+    # verify=False was here
 tail = 2
--- /dev/null
+++ b/docs/guide.md
@@ -0,0 +1 @@
+Never use verify=False.
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-x = 1
-y = 2
"""


def test_diff_lines_numbers_and_files() -> None:
    diff = parse_diff(_DIFF)
    assert [f.path for f in diff.files] == ["app/x.py", "docs/guide.md", "gone.py"]
    x, guide, gone = diff.files
    assert [(line.number, line.text.strip()) for line in x.added] == [
        (11, "new = requests.get(url, timeout=5)  # not verify=False any more"),
        (12, "# verify=False was here"),
    ]
    assert [(line.number, line.added) for line in x.removed] == [(11, False)]
    assert guide.is_new and not x.is_new
    assert gone.path == "gone.py" and [line.number for line in gone.removed] == [1, 2]
    assert len(diff.added_lines()) == 3 and len(diff.removed_lines()) == 3


def test_comments_are_not_code() -> None:
    assert code_part("    x = f()  # verify=False", "python").strip() == "x = f()"
    assert code_part("  // rejectUnauthorized: false", "typescript") == ""
    assert code_part('url = "http://a#b"  # c', "python").strip() == 'url = "http://a#b"'
    assert code_part("-- DROP COLUMN x", "sql") == ""
    assert code_part("# USER root", "docker") == ""
    assert code_part("image: app:1.0 # latest was bad", "yaml").strip() == "image: app:1.0"


def test_paths_are_classified() -> None:
    assert language_of(".github/workflows/ci.yml") == "ci"
    assert language_of("deploy/k8s/api.yaml") == "yaml"
    assert language_of("web/Dockerfile") == "docker"
    assert language_of("infra/main.tf") == "terraform"
    assert (
        is_test_path("tests/test_a.py") and is_test_path("pkg/a_test.go") and is_test_path("src/a.test.tsx")
    )
    assert not is_test_path("src/contest.py")
    assert is_doc_path("README.md") and is_doc_path(".eslintrc.json") and not is_doc_path("app/x.py")
