"""The HTTP API under ``/api/v1`` (memory curation, proposals, events) and the service around it.

:func:`build_service_app` assembles ``roundtable serve``'s application: MCP at ``/mcp``, this API,
and the web console at ``/``; :class:`WebService` owns the background tasks they need.
"""

from __future__ import annotations

from capabilities.http_api._openapi import openapi_document
from capabilities.serving._web import API_PREFIX, WebService, build_service_app, prepare_shutdown

__all__ = ["API_PREFIX", "WebService", "build_service_app", "openapi_document", "prepare_shutdown"]
