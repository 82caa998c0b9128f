"""The example agent's own logic, on the host: which added lines it flags, and the image it builds on.

The Docker test (``tests/supervisor/docker/test_example_agent_docker.py``) runs it for real; these
pin down the diff reading it votes on, which that test exercises with one small patch only.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from supervisor.image import role_image_tag
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "deploy" / "agents" / "example"

TWO_FILES = """\
--- a/app/a.py
+++ b/app/a.py\t2026-01-01 00:00:00
@@ -1,3 +1,4 @@
 x = 1
--- y = 2
+y = 3  # TODO: tune
+z = 4
 w = 5
\\ No newline at end of file
--- a/app/b.py
+++ b/app/b.py
@@ -10,0 +11,2 @@
+++ not a header: an added line
+# FIXME later
"""


@pytest.fixture(scope="module")
def agent() -> Iterator[ModuleType]:
    """``deploy/agents/example/agent.py``, loaded from its file (it is no package of ours)."""
    spec = importlib.util.spec_from_file_location("roundtable_example_agent", EXAMPLE / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_added_lines_carry_their_file_and_new_line_number(agent: ModuleType) -> None:
    added = [(line.path, line.line, line.text) for line in agent.added_lines(TWO_FILES)]
    assert added == [
        ("app/a.py", 2, "y = 3  # TODO: tune"),
        ("app/a.py", 3, "z = 4"),
        ("app/b.py", 11, "++ not a header: an added line"),
        ("app/b.py", 12, "# FIXME later"),
    ]


def test_a_marker_on_an_added_line_asks_for_a_revision_quoting_it(agent: ModuleType) -> None:
    vote, reason, flagged = agent.review(TWO_FILES)
    assert vote == "revise"
    assert [(line.path, line.line) for line in flagged] == [("app/a.py", 2), ("app/b.py", 12)]
    assert "- `app/a.py:2`: `y = 3  # TODO: tune`" in reason and "- `app/b.py:12`: `# FIXME later`" in reason


def test_a_marker_only_on_removed_or_context_lines_is_approved(agent: ModuleType) -> None:
    patch = "--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,2 @@\n # TODO: context\n-# FIXME: removed\n+done = True\n"
    vote, _, flagged = agent.review(patch)
    assert (vote, flagged) == ("approve", [])


def test_the_dockerfile_defaults_to_this_version_s_role_image() -> None:
    dockerfile = (EXAMPLE / "Dockerfile").read_text(encoding="utf-8")
    default = re.search(r"^ARG ROLE_IMAGE=(\S+)$", dockerfile, re.MULTILINE)
    assert default is not None and default[1] == role_image_tag()
