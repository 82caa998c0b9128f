"""The maintainers' web console: server-rendered HTML at ``/``, no front-end build step.

Pages: the proposals with status, warnings and consensus; a proposal with its oracle warnings (the
current patch's first, older ones marked outdated; each cited memory entry a link), votes and
whether each counts, patch versions as coloured diffs, and the timeline (each launch folded into
one row, :mod:`capabilities.console._timeline`); memory search (the oracle's summaries folded
away); a memory entry with the proposals citing it, its revisions, a diff between two chosen
revisions, aliases, provenance, and forms to curate it. Markdown written by agents and
maintainers is rendered and sanitised by :mod:`capabilities.console._markdown`. A small script
follows the live event stream (``/console/events/stream``, authenticated by the session cookie)
and lists new activity.

The console is outside the bearer-guarded prefixes; it has its own login (see
:mod:`capabilities.console._session`). Every page sends a strict Content-Security-Policy (scripts
and styles from this site only, no inline code), and forbids framing.

The endpoints are module-level and read the services from ``request.app.state``
(:func:`capabilities.http_api.api_state`): routes and pages in :mod:`capabilities.console._routes`,
forms in :mod:`capabilities.console._forms`, the layout and error page in
:mod:`capabilities.console._frame`.
"""

from __future__ import annotations

from capabilities.console._routes import CONSOLE_ROUTES

__all__ = ["CONSOLE_ROUTES"]
