"""The third part of the concept table: CI workflows, dependencies, front-end markup, HTTP clients.

See :mod:`roles.providers.judge.lexicon` for the format; :data:`DELIVERY_CONCEPTS` is appended to
its table after :data:`~roles.providers.judge.lexicon_code.CODE_CONCEPTS`.
"""

from __future__ import annotations

from roles.providers.judge.concepts import Concept, cue, pattern
from roles.providers.judge.detectors import (
    container_without_limits,
    job_without_timeout,
    table_without_primary_key,
)

__all__ = ["DELIVERY_CONCEPTS"]

_DEPENDENCY_LINES = (
    pattern(
        r"^\s*\"[@\w./-]+\"\s*:\s*\"[\^~>=<*]?\d[\w.-]*\"",
        "config",
        "adds a package dependency",
        strength=0.7,
        paths=("package.json",),
    ),
    pattern(
        r"^\s*[A-Za-z0-9][\w.\[\],-]*\s*(==|>=|~=|<|>|$)",
        "any",
        "adds a Python requirement",
        strength=0.7,
        paths=("requirements*.txt", "requirements/*.txt"),
    ),
    pattern(
        r"^\s*(require\s+)?[\w.-]+\.[a-z]{2,}/[\w./-]+\s+v\d",
        "any",
        "adds a Go module",
        strength=0.7,
        paths=("go.mod",),
    ),
    pattern(
        r"^\s*[\w-]+\s*=\s*(\"|\{\s*version)", "config", "adds a crate", strength=0.65, paths=("Cargo.toml",)
    ),
)


DELIVERY_CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "pull_request_target",
        cue(r"pull_request_target|untrusted (code|forks?|pull requests?)"),
        (
            pattern(
                r"^\s*-?\s*pull_request_target\s*:?|\bon\s*:.*\bpull_request_target\b",
                "ci",
                "runs on pull_request_target",
                strength=0.9,
            ),
        ),
    ),
    Concept(
        "broad_permissions",
        cue(r"\bpermissions\b|least[- ]privilege|write-all|token scopes?"),
        (
            pattern(
                r"\bpermissions\s*:\s*write-all\b|\bpermissions\s*:\s*\{?\s*contents\s*:\s*write",
                "ci",
                "grants the workflow token broad write access",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "resource_limits",
        cue(r"\b(cpu|memory)\b.*\b(limits?|requests)\b|\bresource limits\b|\blimits\b.*\b(cpu|memory)\b"),
        (),
        detector=container_without_limits,
        detector_what="adds a container with no resource limits",
    ),
    Concept(
        "job_timeout",
        cue(r"\btimeout-minutes\b|\bjobs?\b.*\btimeouts?\b|\btimeouts?\b.*\bjobs?\b"),
        (),
        detector=job_without_timeout,
        detector_what="adds a CI job with no timeout",
    ),
    Concept(
        "image_alt",
        cue(r"\balt (text|attributes?)\b|\baccessib\w*|\ba11y\b|screen readers?"),
        (
            pattern(
                r"<img\b(?![^>]*\balt\s*=)", "typescript", "renders an image without alt text", strength=0.8
            ),
        ),
    ),
    Concept(
        "new_dependency",
        cue(
            r"\b(new|add\w*|extra|third-party)\s+(runtime\s+)?(dependenc\w*|packages?|librar\w*|modules?|crates?)\b"
            r"|\bdependenc\w*\b.*\b(approv\w*|review\w*|adr|allow-?list)\b"
        ),
        _DEPENDENCY_LINES,
    ),
    Concept(
        "unpinned_dependency",
        cue(
            r"\b(pin\w*|exact versions?|lock ?files?|version ranges?|floating versions?)\b"
            r".*\b(dependenc\w*|packages?|"
            r"versions?|requirements?)\b|\b(dependenc\w*|packages?)\b.*\b(pinned|exact)\b"
        ),
        (
            pattern(
                r"^\s*\"[@\w./-]+\"\s*:\s*\"(\^|~|>|\*|latest)",
                "config",
                "adds a dependency with a version range",
                strength=0.8,
                paths=("package.json",),
            ),
            pattern(
                r"^\s*[A-Za-z0-9][\w.\[\],-]*\s*(>=|~=|>|\*|$)",
                "any",
                "adds a requirement without an exact version",
                strength=0.75,
                paths=("requirements*.txt", "requirements/*.txt"),
            ),
        ),
    ),
    Concept(
        "direct_http",
        cue(
            r"\b(http|api|network|outbound|backend)\b.*\b(requests?|calls?|access|clients?)\b"
            r".*\b(go(es)? through|"
            r"through|via|only|must use|use)\b|\b(fetch|axios|requests)\b.*\b(directly|instead)\b"
        ),
        (
            pattern(
                r"\bfetch\s*\(|\baxios(\.\w+)?\s*\(|\bnew\s+XMLHttpRequest\b",
                "typescript",
                "makes an HTTP request directly",
                strength=0.75,
            ),
            pattern(
                r"\brequests\.(get|post|put|patch|delete|request)\s*\(|\burlopen\s*\(|\bhttpx\.(get|post|"
                r"put|delete|Client)\b",
                "python",
                "makes an HTTP request directly",
                strength=0.75,
            ),
            pattern(
                r"\bhttp\.(Get|Post|Head|NewRequest\w*)\s*\(|\bhttp\.DefaultClient\b",
                "go",
                "makes an HTTP request directly",
                strength=0.75,
            ),
            pattern(
                r"\breqwest::(get|Client::new|blocking)",
                "rust",
                "makes an HTTP request directly",
                strength=0.75,
            ),
        ),
        needs_required_span=True,
    ),
    Concept(
        "hardcoded_endpoint",
        cue(
            r"\bhard-?cod\w*\b.*\b(urls?|hosts?|hostnames?|endpoints?|ips?|addresses|domains?)\b|\b(urls?|hosts?|"
            r"endpoints?)\b.*\b(config\w*|environment|env vars?|settings)\b"
        ),
        (
            pattern(
                r"[\"'`]https?://[^\"'`\s]+[\"'`]|[\"'](\d{1,3}\.){3}\d{1,3}(:\d+)?[\"']",
                "code",
                "hardcodes an endpoint",
                strength=0.75,
                in_strings=True,
                unless=r"example\.(com|org)|schemas?\.|w3\.org|json-schema|localhost",
            ),
        ),
    ),
    Concept(
        "primary_key",
        cue(r"\bprimary keys?\b"),
        (),
        detector=table_without_primary_key,
        detector_what="creates a table with no primary key",
    ),
    Concept(
        "console_output",
        cue(r"console\.log|\bprint\(|\bprint statements?|console output|debug output|\bprintln|stdout"),
        (
            pattern(r"\bconsole\.(log|debug|info)\s*\(", "typescript", "writes to the console", strength=0.8),
            pattern(r"^\s*print\s*\(", "python", "prints to stdout", strength=0.75),
            pattern(
                r"\bfmt\.Print(ln|f)?\s*\(|\bprintln!\s*\(|\bdbg!\s*\(",
                "go rust",
                "prints to stdout",
                strength=0.75,
            ),
        ),
    ),
)
