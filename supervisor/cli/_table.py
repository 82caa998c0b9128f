"""Plain tables for the readable output: a header line, padded columns, cells in a style.

Kept out of :mod:`supervisor.cli._output`, whose :func:`~supervisor.cli._output.emit` every command
prints its answer with, the quick hand-off path's included: that path then imports no
``dataclasses`` (nor the ``inspect`` and ``ast`` it brings) for a table it never prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from supervisor.cli._output import clean, paint

__all__ = ["Styled", "table"]


@dataclass(frozen=True)
class Styled:
    """A table cell shown in a style (when colour is on): ``Styled("FAIL", "red")``."""

    text: object
    style: str


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, empty: str = "(none)") -> str:
    """A plain table: a header line, then one line per row, columns padded; the last column is not
    padded (it holds free text). ``empty`` when there are no rows."""
    if not rows:
        return empty
    cells = [[clean(cell.text if isinstance(cell, Styled) else cell) for cell in row] for row in rows]
    styles = [[cell.style if isinstance(cell, Styled) else "" for cell in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    head = "  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    lines = [paint(head, "bold")]
    for row, style in zip(cells, styles, strict=True):
        padded = [
            paint(cell, style[i]) + " " * (widths[i] - len(cell) if i < len(row) - 1 else 0)
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)
