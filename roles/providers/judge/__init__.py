"""The ``judge`` provider: a deterministic, offline MemoryOracle that tells a violation from a mention.

Public surface: :func:`run_judge` (the provider), :data:`PROVIDER_LABEL`, and the executable-check
API the store can reuse (:func:`validate_check`, :func:`validate_checks`, :func:`evaluate`).
"""

from __future__ import annotations

from roles.providers.judge.checks import (
    Check,
    CheckKind,
    CheckViolation,
    evaluate,
    validate_check,
    validate_checks,
)
from roles.providers.judge.provider import CRITICAL, PROVIDER_LABEL, THRESHOLD, run_judge

__all__ = [
    "CRITICAL",
    "PROVIDER_LABEL",
    "THRESHOLD",
    "Check",
    "CheckKind",
    "CheckViolation",
    "evaluate",
    "run_judge",
    "validate_check",
    "validate_checks",
]
