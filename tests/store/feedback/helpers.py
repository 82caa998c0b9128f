"""What the oracle-feedback tests share: one row of ``oracle.stats``."""

from __future__ import annotations

from typing import Any

__all__ = ["stats_row"]


def stats_row(
    provider: str, warnings: int, confirmed: int, dismissed: int, unreviewed: int, precision: float | None
) -> dict[str, Any]:
    """The JSON of one provider's stats, as every surface answers it."""
    return {
        "provider": provider,
        "warnings": warnings,
        "confirmed": confirmed,
        "dismissed": dismissed,
        "unreviewed": unreviewed,
        "precision": precision,
    }
