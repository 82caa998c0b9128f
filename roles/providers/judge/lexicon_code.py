"""The second half of the concept table: code hygiene, web front ends, SQL migrations and CI.

See :mod:`roles.providers.judge.lexicon` for the format; :data:`CODE_CONCEPTS` is appended to
its table.
"""

from __future__ import annotations

from roles.providers.judge.concepts import Concept, cue, pattern

__all__ = ["CODE_CONCEPTS"]

CODE_CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "ignored_error",
        cue(
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
        cue(r"\b(panics?|unwrap\w*|crash\w*|abort\w*)\b"),
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
        cue(
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
        cue(
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
        cue(
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
        cue(
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
        cue(r"\beval\b|dynamic code|\bexec\(|new function"),
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
        cue(r"\btimeouts?\b"),
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
        anti_cue=cue(r"\b(job|workflow|ci|step)s?\b"),
    ),
    Concept(
        "destructive_migration",
        cue(
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
        cue(r"\bconcurrently\b|lock(s|ing)? (writes|the table)|online index"),
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
        cue(r"\b(nullable|defaults?)\b.*\bcolumns?\b|\bcolumns?\b.*\b(nullable|defaults?)\b"),
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
        cue(r"select \*|explicit columns|list (the )?columns"),
        (pattern(r"\bSELECT\s+\*", "sql code", "selects every column", in_strings=True, strength=0.85),),
    ),
)
