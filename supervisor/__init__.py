"""The async supervisor: review rounds, role launches, Docker, the service process and the CLI.

Depends on :mod:`capabilities` and :mod:`store`; nothing imports this package.
"""

from __future__ import annotations

__all__: list[str] = []
