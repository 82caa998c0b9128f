"""The judge's concept table: every regex compiles, and importing the judge compiles none of the patterns."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from roles.providers.judge.concepts import LazyRegex, Pattern
from roles.providers.judge.lexicon import CONCEPTS


def _pattern_regexes(pattern: Pattern) -> list[LazyRegex]:
    return [r for r in (pattern.regex, pattern.also, pattern.unless, pattern.unless_near) if r is not None]


def test_every_pattern_regex_of_the_table_compiles() -> None:
    regexes = [r for concept in CONCEPTS for p in concept.patterns for r in _pattern_regexes(p)]
    assert len(regexes) > 50  # the whole table, not an empty walk
    for regex in regexes:
        assert isinstance(regex.compiled, re.Pattern), regex  # raises re.error for a bad one


def test_importing_the_judge_compiles_no_pattern_regex() -> None:
    """What a launch pays in its container before its first tool call: the cues, not the patterns."""
    script = (
        "import json, roles.providers.judge\n"
        "from roles.providers.judge.lexicon import CONCEPTS\n"
        "regexes = [r for c in CONCEPTS for p in c.patterns"
        " for r in (p.regex, p.also, p.unless, p.unless_near) if r is not None]\n"
        "print(json.dumps([len(regexes), sum(r._compiled is not None for r in regexes)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    total, compiled = json.loads(done.stdout)
    assert total > 50
    assert compiled == 0


def test_a_lazy_regex_searches_as_its_compiled_regex_and_compares_by_source() -> None:
    lazy = LazyRegex(r"\bverify\s*=\s*False\b")
    assert lazy.search("requests.get(url, VERIFY = False)") is not None  # case-insensitive by default
    assert lazy.search("verify=True") is None
    assert LazyRegex("a", re.IGNORECASE) == LazyRegex("a") != LazyRegex("a", 0)
    assert len({LazyRegex("a"), LazyRegex("a")}) == 1
