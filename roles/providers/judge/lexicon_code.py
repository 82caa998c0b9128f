"""The second half of the concept table: code hygiene, web front ends, SQL migrations and CI.

See :mod:`roles.providers.judge.lexicon` for the format; :data:`CODE_CONCEPTS` is appended to
its table.
"""

from __future__ import annotations

import re

from roles.providers.judge.concepts import Concept, pattern
from roles.providers.judge.detectors import (
    container_without_limits,
    job_without_timeout,
    table_without_primary_key,
)

__all__ = ["CODE_CONCEPTS"]

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


def _cue(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


CODE_CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "ignored_error",
        _cue(
            r"\b(discard\w*|ignor\w*|swallow\w*|drop\w*|silenc\w*)\b.*\berrors?\b"
            r"|\berrors?\b.*\b(handled|checked|"
            r"discarded|ignored|swallowed|wrapped|returned)\b|check every error"
        ),
        (
            pattern(
                r"^\s*_\s*=\s*[\w.]+\(|,\s*_\s*:?=\s*[\w.]+\(",
                "go",
                "discards an error",
                strength=0.8,
                unless=r"range\b",
            ),
            pattern(
                r"except(\s+Exception|\s+BaseException)?\s*:\s*pass\b",
                "python",
                "swallows every exception",
                strength=0.85,
            ),
            pattern(
                r"\bcatch\s*(\(\s*\w*\s*\))?\s*\{\s*\}", "typescript", "swallows an error", strength=0.85
            ),
            pattern(r"^\s*let\s+_\s*=\s*[\w.:]+.*[;)]\s*$", "rust", "discards a Result", strength=0.7),
        ),
    ),
    Concept(
        "panic",
        _cue(r"\b(panics?|unwrap\w*|crash\w*|abort\w*)\b"),
        (
            pattern(r"\bpanic\s*\(", "go", "panics", strength=0.85),
            pattern(
                r"\.unwrap\(\s*\)|\.expect\s*\(|\bpanic!\s*\(|\bunimplemented!\s*\(|\btodo!\s*\(",
                "rust",
                "can panic",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "token_web_storage",
        _cue(
            r"\b(tokens?|sessions?|jwts?|credentials?|secrets?)\b.*\b(local ?storage"
            r"|session ?storage|web storage|"
            r"browser storage|persist\w*|memory only|in memory)\b|\b(local ?storage"
            r"|web storage)\b.*\btokens?\b"
        ),
        (
            pattern(
                r"\b(localStorage|sessionStorage)\s*\.\s*setItem\s*\(|\b(localStorage|sessionStorage)\s*\[",
                "typescript",
                "persists a credential in web storage",
                strength=0.85,
                also=r"token|jwt|session|auth|secret|credential|bearer",
            ),
        ),
    ),
    Concept(
        "html_injection",
        _cue(
            r"\b(innerhtml|raw html|html injection|xss|cross-site scripting|sanitis\w*|sanitiz\w*"
            r"|unescaped)\b"
        ),
        (
            pattern(
                r"dangerouslySetInnerHTML|\.innerHTML\s*=|\.outerHTML\s*=|\bv-html\b|insertAdjacentHTML",
                "typescript",
                "injects raw HTML",
                strength=0.9,
            ),
            pattern(
                r"\bmark_safe\s*\(|\bMarkup\s*\(|\|\s*safe\b|template\.HTML\s*\(",
                "python go",
                "marks unescaped HTML as safe",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "shell_injection",
        _cue(
            r"\bshell=true\b|\bthrough a shell\b|\bshell injection\b|\bargv\b|\bargument (lists?|vectors?)\b|"
            r"\bos\.system\b|\bshell strings?\b"
        ),
        (
            pattern(
                r"\bshell\s*=\s*True\b|\bos\.(system|popen)\s*\(",
                "python",
                "runs a command through a shell",
                strength=0.9,
            ),
            pattern(
                r"exec\.Command\(\s*\"(ba)?sh\"\s*,\s*\"-c\"",
                "go",
                "runs a command through a shell",
                strength=0.85,
            ),
            pattern(
                r"\b(execSync|exec)\s*\(\s*[`\"']",
                "typescript",
                "runs a command through a shell",
                strength=0.75,
                also=r"child_process|\$\{|\+",
            ),
        ),
    ),
    Concept(
        "unsafe_deserialize",
        _cue(
            r"\bsafe_?load\b|\bpickle\b|\bdeserializ\w* untrusted|\b(unsafe|untrusted"
            r"|arbitrary)\b.*\b(yaml|pickle|"
            r"deserializ\w*|deserialis\w*|objects?)\b|\b(yaml|deserializ\w*)\b.*\b(safe|unsafe"
            r"|untrusted|arbitrary)\b"
        ),
        (
            pattern(
                r"\byaml\.load\s*\((?!.*SafeLoader)|\byaml\.unsafe_load\b|\byaml\.full_load\b",
                "python",
                "loads YAML with a loader that can build arbitrary objects",
                strength=0.9,
            ),
            pattern(
                r"\b(pickle|cPickle|dill|marshal)\.loads?\s*\(", "python", "unpickles data", strength=0.8
            ),
        ),
    ),
    Concept(
        "dynamic_eval",
        _cue(r"\beval\b|dynamic code|\bexec\(|new function"),
        (
            pattern(
                r"(?<![\w.])eval\s*\(|\bnew\s+Function\s*\(|(?<![\w.])exec\s*\(",
                "python typescript",
                "evaluates code built at run time",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "http_timeout",
        _cue(r"\btimeouts?\b"),
        (
            pattern(
                r"\brequests\.(get|post|put|patch|delete|head|request)\s*\(|\bhttpx\.(get|post|put"
                r"|delete)\s*\(",
                "python",
                "makes an HTTP call without a timeout",
                strength=0.75,
                unless=r"\btimeout\b",
            ),
            pattern(
                r"\bhttp\.(Get|Post|Head|PostForm)\s*\(|&http\.Client\s*\{\s*\}|http\.DefaultClient",
                "go",
                "uses an HTTP client with no timeout",
                strength=0.75,
                unless=r"Timeout",
            ),
        ),
        anti_cue=_cue(r"\b(job|workflow|ci|step)s?\b"),
    ),
    Concept(
        "destructive_migration",
        _cue(
            r"\b(drop\w*|destructive|remov\w* (a )?columns?|expand[- /]and[- /]contract"
            r"|backwards?[- ]compatible|"
            r"renam\w* columns?)\b"
        ),
        (
            pattern(
                r"\bDROP\s+(COLUMN|TABLE)\b|\bRENAME\s+(COLUMN|TO)\b|\bTRUNCATE\b",
                "sql python go",
                "drops or renames schema objects",
                in_strings=True,
                strength=0.85,
                also=r"\b(ALTER|DROP|TRUNCATE)\b",
            ),
        ),
    ),
    Concept(
        "blocking_index",
        _cue(r"\bconcurrently\b|lock(s|ing)? (writes|the table)|online index"),
        (
            pattern(
                r"\bCREATE\s+(UNIQUE\s+)?INDEX\b(?!\s+CONCURRENTLY)",
                "sql",
                "builds an index that locks writes",
                strength=0.8,
            ),
        ),
    ),
    Concept(
        "not_null_no_default",
        _cue(r"\b(nullable|defaults?)\b.*\bcolumns?\b|\bcolumns?\b.*\b(nullable|defaults?)\b"),
        (
            pattern(
                r"\bADD\s+(COLUMN\s+)?\w+\s+[\w()]+.*\bNOT\s+NULL\b",
                "sql",
                "adds a NOT NULL column with no default",
                strength=0.8,
                unless=r"\bDEFAULT\b",
            ),
        ),
    ),
    Concept(
        "select_star",
        _cue(r"select \*|explicit columns|list (the )?columns"),
        (pattern(r"\bSELECT\s+\*", "sql code", "selects every column", in_strings=True, strength=0.85),),
    ),
    Concept(
        "pull_request_target",
        _cue(r"pull_request_target|untrusted (code|forks?|pull requests?)"),
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
        _cue(r"\bpermissions\b|least[- ]privilege|write-all|token scopes?"),
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
        _cue(r"\b(cpu|memory)\b.*\b(limits?|requests)\b|\bresource limits\b|\blimits\b.*\b(cpu|memory)\b"),
        (),
        detector=container_without_limits,
        detector_what="adds a container with no resource limits",
    ),
    Concept(
        "job_timeout",
        _cue(r"\btimeout-minutes\b|\bjobs?\b.*\btimeouts?\b|\btimeouts?\b.*\bjobs?\b"),
        (),
        detector=job_without_timeout,
        detector_what="adds a CI job with no timeout",
    ),
    Concept(
        "image_alt",
        _cue(r"\balt (text|attributes?)\b|\baccessib\w*|\ba11y\b|screen readers?"),
        (
            pattern(
                r"<img\b(?![^>]*\balt\s*=)", "typescript", "renders an image without alt text", strength=0.8
            ),
        ),
    ),
    Concept(
        "new_dependency",
        _cue(
            r"\b(new|add\w*|extra|third-party)\s+(runtime\s+)?(dependenc\w*|packages?|librar\w*|modules?|crates?)\b"
            r"|\bdependenc\w*\b.*\b(approv\w*|review\w*|adr|allow-?list)\b"
        ),
        _DEPENDENCY_LINES,
    ),
    Concept(
        "unpinned_dependency",
        _cue(
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
        _cue(
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
        _cue(
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
        _cue(r"\bprimary keys?\b"),
        (),
        detector=table_without_primary_key,
        detector_what="creates a table with no primary key",
    ),
    Concept(
        "console_output",
        _cue(r"console\.log|\bprint\(|\bprint statements?|console output|debug output|\bprintln|stdout"),
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
