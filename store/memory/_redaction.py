"""Redaction of recognizable secrets in text written to memory.

The HTTP memory endpoints redact the title, body, tags and provenance of what they write (the seed
redacted only the body, and only on some paths) and redact again when they answer, so an entry
recorded through another surface never leaks a secret through the HTTP API or the console.

Recognized: PEM private-key blocks, AWS access key IDs and secret-key assignments, GitHub tokens
(``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), ``sk-...`` API keys, Slack
tokens, ``Bearer`` credentials, and ``password=...``-style assignments. Each match becomes
``[REDACTED]``; for assignments and ``Bearer`` the label is kept so the text still reads.
This is a safety net, not a secret scanner: keep credentials out of memory in the first place.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact", "redact_json"]

REDACTED = "[REDACTED]"

_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
_WHOLE = [
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,255}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,255}\b"),
    re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
]
# "label <sep> value": the label stays, the value goes.
_ASSIGNMENT = re.compile(
    r"(?i)\b((?:aws_secret_access_key|aws_session_token|password|passwd|pwd|secret|client_secret"
    r"|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}")
# Cheap substring checks first: a pattern above can only match text holding one of its markers,
# so the common case (no secret at all) costs a few ``in`` scans instead of eight regexes.
_EXACT_MARKERS = (
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "xox",
)  # fmt: skip
_FOLDED_MARKERS = (
    "private key-----", "bearer", "password", "passwd", "pwd", "secret",
    "api_key", "api-key", "apikey", "access_token", "access-token", "accesstoken",
    "auth_token", "auth-token", "authtoken", "aws_session_token",
)  # fmt: skip


def redact(text: str) -> str:
    """``text`` with every recognizable secret replaced by ``[REDACTED]``."""
    if not text:
        return text
    if not any(marker in text for marker in _EXACT_MARKERS):
        # casefold, like the regex engine's case-insensitive matching ("ſ" is an "s" to both).
        folded = text.casefold()
        if not any(marker in folded for marker in _FOLDED_MARKERS):
            return text
    return _redact_all(text)


def _redact_all(text: str) -> str:
    """Every pattern, without the marker shortcut (what :func:`redact` must always agree with)."""
    out = _PEM.sub(REDACTED, text)
    for pattern in _WHOLE:
        out = pattern.sub(REDACTED, out)
    out = _ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, out)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, out)


def redact_json(value: Any) -> Any:
    """A JSON value with :func:`redact` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {redact(str(key)): redact_json(item) for key, item in value.items()}
    return value
