"""The judge's rules one by one: span matching, concepts, detectors, discounts."""

from __future__ import annotations

import pytest

from roles.providers.judge.concepts import without_string_text
from roles.providers.judge.detectors import (
    container_without_limits,
    dockerfile_without_user,
    job_without_timeout,
)
from roles.providers.judge.diff import parse_diff
from roles.providers.judge.judge import assess, span_regex
from roles.providers.judge.polarity import parse_entry


def _confidence(body: str, path: str, *lines: str, kind: str = "decision") -> float:
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,9 @@\n ctx\n" + "\n".join(lines) + "\n"
    finding = assess(
        parse_entry({"id": "M", "kind": kind, "title": "Rule", "body_md": body}), parse_diff(diff)
    )
    return 0.0 if finding is None else finding.confidence


@pytest.mark.parametrize(
    ("span", "code", "found"),
    [
        ("verify=False", "get(u, verify = False)", True),
        ("verify=False", "get(u, verify=False_flag)", False),
        ("yaml.load", "yaml.safe_load(f)", False),
        ("eval()", "eval(user_input)", True),
        ("DROP COLUMN", "ALTER TABLE t DROP   COLUMN x", True),
        ("echo ${{ secrets.* }}", 'echo "${{ secrets.TOKEN }}"', False),
        ("echo ${{ secrets.* }}", "echo ${{ secrets.TOKEN }}", True),
        (":latest", "FROM node:latest", True),
    ],
)
def test_span_regex(span: str, code: str, found: bool) -> None:
    regex = span_regex(span)
    assert regex is not None
    assert (regex.search(code) is not None) is found


def test_vague_spans_are_not_searched() -> None:
    assert span_regex("_") is None and span_regex("==") is None and span_regex("migrations/") is None


def test_string_text_is_blanked_but_interpolations_kept() -> None:
    assert "email" not in without_string_text('log.info("sent %d emails", n)')
    assert "user.email" in without_string_text('log.info(f"hi {user.email}")')


def test_evidence_is_discounted_where_it_is_not_a_use() -> None:
    body = "Never use `verify=False`."
    added = _confidence(body, "app/a.py", "+get(u, verify=False)")
    assert added >= 0.9
    assert _confidence(body, "tests/test_a.py", "+get(u, verify=False)") < 0.6
    assert _confidence(body, "app/a.py", '+msg = "verify=False is refused"') < 0.6
    assert _confidence(body, "app/a.py", "-get(u, verify=False)", "+get(v, verify=False)") < 0.6  # kept
    assert _confidence(body, "app/a.py", "+get(u, verify=False)", kind="note") == 0.0
    assert _confidence("Prefer not to use `verify=False`.", "app/a.py", "+get(u, verify=False)") < added


def test_paths_in_a_decision_limit_it() -> None:
    body = "Code under pkg/ must not call `panic`."
    assert _confidence(body, "pkg/a/a.go", '+panic("x")') >= 0.6
    assert _confidence(body, "cmd/tool/main.go", '+panic("x")') == 0.0


def test_frozen_paths_and_new_files() -> None:
    body = "Applied migrations are never edited."
    edited = "--- a/migrations/0001.sql\n+++ b/migrations/0001.sql\n@@ -1 +1 @@\n-a INT\n+a BIGINT\n"
    created = "--- /dev/null\n+++ b/migrations/0002.sql\n@@ -0,0 +1 @@\n+a BIGINT\n"
    rule = parse_entry({"id": "M", "kind": "constraint", "title": "Frozen", "body_md": body})
    assert assess(rule, parse_diff(edited)) is not None
    assert assess(rule, parse_diff(created)) is None


def test_detectors_find_what_is_missing() -> None:
    pod = parse_diff(
        "--- a/k8s/a.yaml\n+++ b/k8s/a.yaml\n@@ -1,1 +1,5 @@\n containers:\n"
        "+  - name: side\n+    image: busybox:1.36\n+  - name: main\n+    image: app:1.0\n"
        "+    resources:\n+      limits:\n+        cpu: 1\n"
    ).files[0]
    assert [line.text.strip() for line in container_without_limits(pod)] == ["- name: side"]
    job = parse_diff(
        "--- a/.github/workflows/a.yml\n+++ b/.github/workflows/a.yml\n@@ -1,1 +1,4 @@\n jobs:\n"
        "+  e2e:\n+    runs-on: ubuntu-24.04\n+    steps: []\n"
    ).files[0]
    assert len(job_without_timeout(job)) == 1
    image = parse_diff(
        "--- /dev/null\n+++ b/Dockerfile\n@@ -0,0 +1,3 @@\n+FROM python:3.12 AS build\n+USER app\n"
        "+FROM python:3.12-slim\n"
    ).files[0]
    assert [line.number for line in dockerfile_without_user(image)] == [3]
